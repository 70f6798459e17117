// Viewer entry point: wires the scene (view.js), the session (session.js), the controls
// (controls.js), picking and follow (selection.js) and the display widgets (ui.js) together, runs
// the frame loop and the status line, and publishes the read-only `window.viewer`.

import { OverlayMenu, Timeline, speedRange } from './controls.js';
import { GamePanel } from './game.js';
import { Selection } from './selection.js';
import { Session, fetchHealth, fetchReplays } from './session.js';
import { EntityLegend, Inspector, Legend, Messages, Picker, PolicyList, TerrainLegend, formatNumber } from './ui.js';
import { SceneView } from './view.js';

const $ = (id) => document.getElementById(id);

class Viewer {
  constructor() {
    this.view = new SceneView($('canvas'));
    this.messages = new Messages();
    this.legend = new Legend();
    this.terrainLegend = new TerrainLegend();
    this.entityLegend = new EntityLegend();
    this.inspector = new Inspector();
    this.policyList = new PolicyList();
    this.gamePanel = new GamePanel();
    this.picker = new Picker((name) => this.choose(name));
    this.session = new Session(this.view, {
      header: (h) => this.onHeader(h),
      tick: () => this.onTick(),
      status: (s) => this.onStatus(s),
      overlay: (name, overlay) => this.onOverlay(name, overlay),
      error: (text) => this.messages.error(text),
      connection: (text) => this.messages.connection(text),
    });
    const send = (cmd) => this.session.send(cmd);
    this.timeline = new Timeline(send, () => this.session.mode === 'replay');
    this.overlayMenu = new OverlayMenu(
      (name) => this.session.chooseOverlay(name),
      (alpha) => this.view.terrain.setOverlayAlpha(alpha),
    );
    this.selection = new Selection(this.view, this.session, this.inspector, this.messages);
    $('open-picker').addEventListener('click', () => this.openPicker());
    window.addEventListener('keydown', (ev) => this.onKey(ev));

    this.framedSize = 0; // map size the camera was last fitted to
    this.statusDirty = true;
    this.view.start(() => this.frame());
  }

  // ---------------------------------------------------------------- choosing what to watch

  start() {
    fetchHealth().then((health) => {
      if (health && health.live === false) this.picker.setLive(false);
    });
    const params = new URLSearchParams(location.search);
    const replay = params.get('replay');
    if (replay) return this.connect('replay', replay);
    if (params.has('live')) return this.connect('live', null);
    fetchReplays().then((list) => {
      if (list && list.length) {
        this.picker.show(list);
        $('mode').textContent = 'choose';
        $('status').textContent = 'pick a replay or the live run';
      } else {
        this.connect('live', null);
      }
    });
    return undefined;
  }

  async openPicker() {
    const list = await fetchReplays();
    this.picker.show(list || []);
  }

  choose(name) {
    this.picker.hide();
    const url = new URL(location.href);
    url.searchParams.delete('replay');
    url.searchParams.delete('live');
    if (name) url.searchParams.set('replay', name);
    else url.searchParams.set('live', '1');
    history.replaceState(null, '', url);
    this.connect(name ? 'replay' : 'live', name);
  }

  connect(mode, name) {
    $('mode').textContent = mode === 'replay' ? `replay ${name}` : 'live';
    this.session.connect(mode, name);
    this.updateControls();
  }

  // ---------------------------------------------------------------- session events

  onHeader(h) {
    const session = this.session;
    this.inspector.policies = session.roster;
    this.inspector.tasks = Array.isArray(h.tasks?.names) ? h.tasks.names.map(String) : null;
    this.inspector.values = h.values && typeof h.values === 'object' ? h.values : null;
    this.policyList.show(session.roster ? session.roster.names : null);
    this.gamePanel.reset(h.game, session.roster);
    this.terrainLegend.show(h);
    this.entityLegend.show(h, session.roster);
    this.legend.hide();
    this.overlayMenu.fill(h.overlays || []);
    this.openRequestedOverlay(h.overlays || []);
    this.timeline.setSpeedRange(speedRange(h), session.speed);
    this.timeline.setTicks(session.ticks, session.tick); // replays hold ticks 0..ticks
    const size = h.size | 0;
    if (this.framedSize !== size) {
      this.view.frameMap(size);
      this.framedSize = size;
    }
    this.updateControls();
    this.statusDirty = true;
  }

  /** The overlay the link asks for (`?overlay=value`), once, when the header offers it. */
  openRequestedOverlay(names) {
    const wanted = new URLSearchParams(location.search).get('overlay');
    if (!wanted || this.requestedOverlayShown || !names.includes(wanted)) return;
    this.requestedOverlayShown = true;
    this.session.chooseOverlay(wanted);
  }

  onTick() {
    this.gamePanel.show(this.session.game);
    this.selection.refresh();
    this.statusDirty = true;
  }

  onStatus(s) {
    const session = this.session;
    if (typeof s.speed === 'number') this.timeline.syncSpeed(s.speed);
    if ('overlay' in s) {
      if (s.overlay) this.overlayMenu.sync(s.overlay);
      else if (session.overlayName === null) this.overlayMenu.sync(null);
    }
    if (session.ticks) this.timeline.setTicks(session.ticks);
    this.updateControls();
    this.statusDirty = true;
  }

  /** The overlay changed: cleared (name null), selected without data (overlay null), or shown; the
   * legend says what its tiles without data show (the header's `overlay_blank`). */
  onOverlay(name, overlay) {
    const blank = name ? this.session.header?.overlay_blank?.[name] : undefined;
    if (!name) this.legend.hide();
    else if (!overlay) this.legend.empty(name, blank);
    else this.legend.show(name, overlay.min, overlay.max, blank);
    this.overlayMenu.sync(name);
  }

  onKey(ev) {
    const tag = ev.target && ev.target.tagName;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') return;
    if (ev.key === ' ') {
      ev.preventDefault();
      this.session.send({ cmd: this.session.playing ? 'pause' : 'play' });
    } else if (ev.key === '.') this.session.send({ cmd: 'step' });
    else if (ev.key === 'Escape') this.selection.select(null);
    else if (ev.key === 'h' || ev.key === 'H' || ev.key === 'Home') this.view.frameMap();
    else if (ev.key === 'f' || ev.key === 'F') this.selection.toggleFollow();
  }

  // ---------------------------------------------------------------- status line and frame loop

  updateControls() {
    this.timeline.update(!!this.session.header, this.session.playing);
  }

  refreshStatus() {
    this.statusDirty = false;
    const { store, tick, ticks, header, playing, speed } = this.session;
    const parts = [];
    const t = tick ?? '–';
    parts.push(ticks ? `tick ${t} / ${ticks}` : `tick ${t}`);
    parts.push(playing ? `playing ${formatNumber(speed)} t/s` : 'paused');
    let players = 0;
    const kinds = store.columns.get('kind');
    if (kinds) for (let s = 0; s < store.count; s++) if (kinds[s] === 0) players++;
    parts.push(`${players} agents, ${store.count - players} NPCs`);
    if (header) parts.push(`${header.size}² map`);
    parts.push(`${this.view.fps} fps`);
    $('status').textContent = parts.join(' · ');
    this.timeline.showTick(tick, ticks);
    this.updateControls();
  }

  frame() {
    const now = performance.now();
    const store = this.session.store;
    store.interpolate(now);
    this.selection.update();
    if (this.view.draw(store, now, this.selection.selectedId)) this.statusDirty = true;
    if (this.statusDirty) this.refreshStatus();
  }
}

const viewer = new Viewer();
const { session, view, selection } = viewer;

// Read-only helpers for tests and the console.
window.viewer = Object.freeze({
  get packets() {
    return session.packets;
  },
  get tick() {
    return session.tick;
  },
  get selectedId() {
    return selection.selectedId;
  },
  get mode() {
    return session.mode;
  },
  get overlay() {
    return session.overlayName;
  },
  /** A copy of the minigame's state at this tick (null without a game). */
  get game() {
    return session.game ? structuredClone(session.game) : null;
  },
  get playing() {
    return session.playing;
  },
  get speed() {
    return session.speed;
  },
  /** [low, high] ticks per second the speed menu offers (the header's `speed_range`, or the fallback). */
  get speedRange() {
    return [...viewer.timeline.range];
  },
  /** A copy of the last header packet without its `material` bytes (null before the first). */
  get header() {
    if (!session.header) return null;
    const { material, ...rest } = session.header;
    return structuredClone(rest);
  },
  get connected() {
    return session.connected;
  },
  get fps() {
    return view.fps;
  },
  get stats() {
    const info = view.info;
    return {
      fps: view.fps,
      updateMs: view.updateMs,
      renderMs: view.renderMs,
      drawCalls: info.calls,
      triangles: info.triangles,
      entities: session.store.count,
      attacks: view.effects.total,
    };
  },
  entityIds() {
    return Array.from(session.store.ids.subarray(0, session.store.count));
  },
  screenPosition(id) {
    return selection.screenPosition(id);
  },
  /** The fields of one entity as last received ({team, kind, health, ...}), or null when gone. */
  entity(id) {
    const store = session.store;
    const slot = store.index.get(id);
    if (slot === undefined) return null;
    const out = {};
    for (const [name, col] of store.columns) out[name] = col[slot];
    return out;
  },
});

viewer.start();
