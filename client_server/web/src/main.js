// Viewer entry point: scene, camera, packet handling, timeline, picking, the frame loop.

import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import { Connection, decodeBase64, wsURL } from './connection.js';
import { AttackEffects } from './effects.js';
import { EntityRenderer } from './entities.js';
import { EntityStore } from './state.js';
import { Terrain } from './terrain.js';
import { Inspector, Legend, Messages, Picker, PolicyList, formatNumber, normalizeReplays } from './ui.js';

const $ = (id) => document.getElementById(id);
const SPEEDS = [0.5, 1, 2, 5, 10, 20, 30, 60];

class Viewer {
  constructor() {
    this.canvas = $('canvas');
    this.renderer = new THREE.WebGLRenderer({ canvas: this.canvas, antialias: true, powerPreference: 'high-performance' });
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
    this.renderer.setClearColor(0x10151c);

    this.scene = new THREE.Scene();
    this.camera = new THREE.PerspectiveCamera(45, 1, 0.1, 4000);
    this.scene.add(new THREE.HemisphereLight(0xdfe9ff, 0x3a3428, 1.6));
    const sun = new THREE.DirectionalLight(0xffffff, 1.8);
    sun.position.set(-0.45, 0.8, -0.4);
    this.scene.add(sun);

    this.controls = new OrbitControls(this.camera, this.canvas);
    this.controls.enableDamping = true;
    this.controls.dampingFactor = 0.12;
    this.controls.screenSpacePanning = false; // pan along the ground
    this.controls.maxPolarAngle = Math.PI * 0.47;
    this.controls.minDistance = 2;
    this.controls.zoomToCursor = true; // wheel zooms towards the pointer, handy on big maps

    this.terrain = new Terrain(this.scene);
    this.store = new EntityStore();
    this.store.heightAt = (r, c) => this.terrain.heightAt(r, c);
    this.entities = new EntityRenderer(this.scene);
    this.effects = new AttackEffects(this.scene);
    this.raycaster = new THREE.Raycaster();
    this._v = new THREE.Vector3();
    this._v2 = new THREE.Vector2();

    this.messages = new Messages();
    this.legend = new Legend();
    this.inspector = new Inspector();
    this.policyList = new PolicyList();
    this.picker = new Picker((name) => this.choose(name));

    // Session state
    this.conn = null;
    this.mode = null; // 'live' | 'replay'
    this.replayName = null;
    this.header = null;
    this.packets = 0;
    this.tick = null;
    this.ticks = null;
    this.playing = false;
    this.speed = 10;
    this.overlayName = null;
    this.selectedId = null;
    this.following = false;
    this.lastTickAt = 0;
    this.gapEma = 0;
    this.framedSize = 0;
    this.scale = 1;
    this.frames = 0;
    this.fps = 0;
    this.fpsT0 = performance.now();
    this.seekDragging = false;
    this.statusDirty = true;
    this.updateMs = 0;
    this.renderMs = 0;

    this.bindUI();
    this.resize();
    window.addEventListener('resize', () => this.resize());
    this.renderer.setAnimationLoop(() => this.frame());
  }

  // ---------------------------------------------------------------- connection

  start() {
    fetch('/api/health', { cache: 'no-store' })
      .then((res) => (res.ok ? res.json() : null))
      .then((health) => {
        if (health && health.live === false) this.picker.setLive(false);
      })
      .catch(() => {});
    const params = new URLSearchParams(location.search);
    const replay = params.get('replay');
    if (replay) return this.connect('replay', replay);
    if (params.has('live')) return this.connect('live', null);
    this.fetchReplays().then((list) => {
      if (list && list.length) {
        this.picker.show(list);
        this.setModeBadge('choose');
        this.statusText('pick a replay or the live run');
      } else {
        this.connect('live', null);
      }
    });
  }

  async fetchReplays() {
    try {
      const res = await fetch('/api/replays', { cache: 'no-store' });
      if (!res.ok) return null;
      return normalizeReplays(await res.json());
    } catch {
      return null;
    }
  }

  async openPicker() {
    const list = await this.fetchReplays();
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
    if (this.conn) this.conn.close();
    this.mode = mode;
    this.replayName = name;
    this.setModeBadge(mode === 'replay' ? `replay ${name}` : 'live');
    const path = mode === 'replay' ? `/ws/replay/${encodeURIComponent(name)}` : '/ws/live';
    this.conn = new Connection(wsURL(path), {
      onPacket: (msg) => this.onPacket(msg),
      onOpen: () => this.messages.connection(null),
      onClose: (delay) => this.messages.connection(`connection closed — reconnecting in ${delay} s…`),
      onBadFrame: (text) => this.messages.error(`unreadable frame: ${text}`),
    });
    this.conn.connect();
    this.updateControls();
  }

  send(cmd) {
    if (!this.conn || !this.conn.send(cmd)) this.messages.error('not connected');
  }

  // ---------------------------------------------------------------- packets

  onPacket(msg) {
    switch (msg.type) {
      case 'header':
        return this.onHeader(msg);
      case 'tick':
        return this.onTick(msg);
      case 'status':
        return this.onStatus(msg);
      case 'error':
        return this.messages.error(String(msg.message ?? 'error'));
      default:
        return undefined;
    }
  }

  onHeader(h) {
    this.header = h;
    if (h.mode === 'live' || h.mode === 'replay') this.mode = h.mode;
    const size = h.size | 0;
    let material = h.material ? decodeBase64(h.material) : new Uint8Array(size * size);
    if (material.length < size * size) {
      const padded = new Uint8Array(size * size);
      padded.set(material);
      material = padded;
    }
    this.terrain.setMap(h, material);
    const policies = Array.isArray(h.config?.policies) ? h.config.policies.map(String) : null;
    const dealt = Array.isArray(h.config?.team_policy) ? h.config.team_policy.map(Number) : null;
    const roster = policies ? { names: policies, teamPolicy: dealt } : null;
    this.entities.policies = roster;
    this.inspector.policies = roster;
    this.policyList.show(policies);
    this.store.reset(h.fields);
    this.effects.reset();
    this.tick = h.tick ?? 0;
    this.ticks = h.ticks ?? null;
    this.overlayName = null;
    this.legend.hide();
    this.fillOverlayMenu(h.overlays || []);
    const seek = $('seek');
    seek.max = String(Math.max(0, this.ticks ?? 0)); // replays hold ticks 0..ticks
    seek.value = String(this.tick);
    this.gapEma = 0;
    if (this.framedSize !== size) {
      this.frameMap();
      this.framedSize = size;
    }
    this.updateControls();
    this.statusDirty = true;
  }

  onTick(msg) {
    if (!this.header) return;
    const now = performance.now();
    const gap = now - this.lastTickAt;
    this.lastTickAt = now;
    if (!msg.full && gap > 0 && gap < 2000) this.gapEma = this.gapEma ? this.gapEma * 0.7 + gap * 0.3 : gap;
    const nominal = 1000 / Math.max(0.5, this.speed || 10);
    const duration = this.playing ? Math.min(1000, Math.max(16, this.gapEma || nominal)) : Math.min(300, nominal);

    this.packets++;
    if (typeof msg.tick === 'number') this.tick = msg.tick;
    this.store.apply(msg, now, duration);
    if (Array.isArray(msg.tiles) && msg.tiles.length) this.terrain.setTiles(msg.tiles);
    if (msg.overlay) this.onOverlay(msg.overlay);
    this.store.interpolate(now);
    if (Array.isArray(msg.attacks) && msg.attacks.length) {
      this.effects.add(msg.attacks, this.store, now, Math.min(700, Math.max(250, duration * 1.5)));
    }
    if (this.selectedId !== null) {
      this.inspector.render(this.store, this.terrain);
      if (this.following && !this.store.has(this.selectedId)) {
        this.setFollow(false);
        this.messages.error(`entity ${this.selectedId} is gone; stopped following`);
      }
    }
    this.statusDirty = true;
  }

  onOverlay(ov) {
    if (!ov.name) {
      this.terrain.setOverlay(null);
      this.legend.hide();
      this.overlayName = null;
      $('overlay-select').value = '';
      return;
    }
    if (!ov.data) {
      // selected, but the server has no values for it at this tick (yet)
      this.terrain.setOverlay(null);
      this.legend.empty(ov.name);
      this.overlayName = ov.name;
      this.syncOverlaySelect(ov.name);
      return;
    }
    this.terrain.setOverlay(decodeBase64(ov.data));
    this.overlayName = ov.name;
    this.legend.show(ov.name, ov.min, ov.max);
    this.syncOverlaySelect(ov.name);
  }

  onStatus(s) {
    if (typeof s.playing === 'boolean') this.playing = s.playing;
    if (typeof s.speed === 'number') {
      this.speed = s.speed;
      this.syncSpeed(s.speed);
    }
    if (typeof s.tick === 'number' && this.tick === null) this.tick = s.tick;
    if (s.ticks !== undefined) this.ticks = s.ticks;
    if ('overlay' in s) {
      if (s.overlay) this.syncOverlaySelect(s.overlay);
      else if (this.overlayName === null) $('overlay-select').value = '';
    }
    if (this.ticks) $('seek').max = String(this.ticks);
    this.updateControls();
    this.statusDirty = true;
  }

  // ---------------------------------------------------------------- UI

  bindUI() {
    // Buttons give focus back so Space/. keep acting as shortcuts (not as a second click).
    for (const name of ['play', 'pause', 'step']) {
      $(name).addEventListener('click', (ev) => {
        this.send({ cmd: name });
        ev.currentTarget.blur();
      });
    }
    $('speed').addEventListener('change', (ev) => this.send({ cmd: 'speed', value: Number(ev.target.value) }));
    const seek = $('seek');
    seek.addEventListener('pointerdown', () => (this.seekDragging = true));
    // a press that ends without a change must not leave the slider frozen
    window.addEventListener('pointerup', () => setTimeout(() => (this.seekDragging = false), 0));
    seek.addEventListener('input', () => {
      this.seekDragging = true;
      $('tick-label').textContent = `→ ${seek.value}`;
    });
    seek.addEventListener('change', () => {
      this.seekDragging = false;
      if (this.mode === 'replay') this.send({ cmd: 'seek', tick: Number(seek.value) });
    });
    $('overlay-select').addEventListener('change', (ev) => {
      const name = ev.target.value || null;
      this.send({ cmd: 'overlay', name });
      if (!name) {
        // clear locally at once; the server confirms with an overlay packet / status
        this.terrain.setOverlay(null);
        this.legend.hide();
        this.overlayName = null;
      }
    });
    $('overlay-opacity').addEventListener('input', (ev) => this.terrain.setOverlayAlpha(Number(ev.target.value) / 100));
    $('inspector-close').addEventListener('click', () => this.select(null));
    $('follow').addEventListener('change', (ev) => this.setFollow(ev.target.checked));
    $('open-picker').addEventListener('click', () => this.openPicker());

    // Click (not drag) on the canvas picks an entity.
    let down = null;
    this.canvas.addEventListener('pointerdown', (ev) => {
      down = { x: ev.clientX, y: ev.clientY, button: ev.button };
    });
    this.canvas.addEventListener('pointerup', (ev) => {
      if (!down || down.button !== 0) return;
      const moved = Math.hypot(ev.clientX - down.x, ev.clientY - down.y);
      down = null;
      if (moved < 6) this.pickAt(ev.clientX, ev.clientY);
    });

    window.addEventListener('keydown', (ev) => {
      const tag = ev.target && ev.target.tagName;
      if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') return;
      if (ev.key === ' ') {
        ev.preventDefault();
        this.send({ cmd: this.playing ? 'pause' : 'play' });
      } else if (ev.key === '.') this.send({ cmd: 'step' });
      else if (ev.key === 'Escape') this.select(null);
      else if (ev.key === 'h' || ev.key === 'H' || ev.key === 'Home') this.frameMap();
      else if ((ev.key === 'f' || ev.key === 'F') && this.selectedId !== null) this.setFollow(!this.following);
    });
  }

  fillOverlayMenu(names) {
    const sel = $('overlay-select');
    sel.replaceChildren();
    const none = document.createElement('option');
    none.value = '';
    none.textContent = 'none';
    sel.appendChild(none);
    for (const name of names) {
      const opt = document.createElement('option');
      opt.value = name;
      opt.textContent = name;
      sel.appendChild(opt);
    }
    sel.value = '';
  }

  syncOverlaySelect(name) {
    const sel = $('overlay-select');
    if (![...sel.options].some((o) => o.value === name)) {
      const opt = document.createElement('option');
      opt.value = name;
      opt.textContent = name;
      sel.appendChild(opt);
    }
    sel.value = name;
  }

  syncSpeed(speed) {
    const sel = $('speed');
    let best = SPEEDS[0];
    for (const s of SPEEDS) if (Math.abs(s - speed) < Math.abs(best - speed)) best = s;
    if (Math.abs(best - speed) > 1e-6) {
      let opt = [...sel.options].find((o) => Number(o.value) === speed);
      if (!opt) {
        opt = document.createElement('option');
        opt.value = String(speed);
        opt.textContent = `${speed} t/s`;
        sel.appendChild(opt);
      }
      sel.value = opt.value;
    } else {
      sel.value = String(best);
    }
  }

  updateControls() {
    const connected = !!this.header;
    $('play').disabled = !connected;
    $('pause').disabled = !connected;
    $('step').disabled = !connected;
    $('speed').disabled = !connected;
    $('seek').disabled = !connected || this.mode !== 'replay';
    $('play').classList.toggle('active', this.playing);
    $('pause').classList.toggle('active', !this.playing);
  }

  setModeBadge(text) {
    $('mode').textContent = text;
  }

  statusText(text) {
    $('status').textContent = text;
  }

  refreshStatus() {
    this.statusDirty = false;
    const parts = [];
    const t = this.tick ?? '–';
    parts.push(this.ticks ? `tick ${t} / ${this.ticks}` : `tick ${t}`);
    parts.push(this.playing ? `playing ${formatNumber(this.speed)} t/s` : 'paused');
    let players = 0;
    const kinds = this.store.columns.get('kind');
    if (kinds) for (let s = 0; s < this.store.count; s++) if (kinds[s] === 0) players++;
    parts.push(`${players} agents, ${this.store.count - players} NPCs`);
    if (this.header) parts.push(`${this.header.size}² map`);
    parts.push(`${this.fps} fps`);
    this.statusText(parts.join(' · '));
    if (!this.seekDragging) {
      $('seek').value = String(this.tick ?? 0);
      $('tick-label').textContent = this.ticks ? `${t} / ${this.ticks}` : `tick ${t}`;
    }
    this.updateControls();
  }

  // ---------------------------------------------------------------- selection & camera

  pickAt(clientX, clientY) {
    const rect = this.canvas.getBoundingClientRect();
    this._v2.set(((clientX - rect.left) / rect.width) * 2 - 1, -((clientY - rect.top) / rect.height) * 2 + 1);
    this.raycaster.setFromCamera(this._v2, this.camera);
    let id = this.entities.pick(this.raycaster);
    if (id === null) id = this.nearestOnScreen(clientX, clientY, 14);
    this.select(id);
  }

  nearestOnScreen(clientX, clientY, radius) {
    let best = null;
    let bestD = radius;
    for (let s = 0; s < this.store.count; s++) {
      const p = this.screenPosition(this.store.ids[s]);
      if (!p) continue;
      const d = Math.hypot(p.x - clientX, p.y - clientY);
      if (d < bestD) {
        bestD = d;
        best = this.store.ids[s];
      }
    }
    return best;
  }

  select(id) {
    if (id === this.selectedId) return;
    if (this.following) this.setFollow(false);
    this.selectedId = id;
    if (id === null) {
      this.inspector.close();
      return;
    }
    this.inspector.open(id);
    this.inspector.render(this.store, this.terrain);
  }

  setFollow(on) {
    on = on && this.selectedId !== null;
    this.following = on;
    $('follow').checked = on;
    if (on) {
      // close in on the followed entity if the camera is far away
      const slot = this.store.index.get(this.selectedId);
      const target = this.controls.target;
      const offset = this._v.copy(this.camera.position).sub(target);
      if (slot !== undefined) target.set(this.store.x[slot], this.store.y[slot], this.store.z[slot]);
      if (offset.length() > 30) offset.setLength(30);
      this.camera.position.copy(target).add(offset);
    }
    this.send({ cmd: 'follow', id: on ? this.selectedId : null });
  }

  /** CSS-pixel position of entity `id` as drawn in the last frame, or null. */
  screenPosition(id) {
    const slot = this.store.index.get(id);
    if (slot === undefined) return null;
    const v = this._v.set(this.store.x[slot], this.store.y[slot] + 0.4 * this.scale, this.store.z[slot]);
    v.project(this.camera);
    if (v.z > 1 || v.z < -1) return null;
    const rect = this.canvas.getBoundingClientRect();
    return { x: rect.left + ((v.x + 1) / 2) * rect.width, y: rect.top + ((1 - v.y) / 2) * rect.height };
  }

  frameMap() {
    const size = this.header ? this.header.size : 64;
    const c = size / 2;
    const fov = THREE.MathUtils.degToRad(this.camera.fov);
    const aspect = Math.max(0.3, this.camera.aspect);
    const fit = Math.max(size, size / aspect);
    const dist = (fit * 0.62) / Math.tan(fov / 2);
    const elev = THREE.MathUtils.degToRad(58);
    this.controls.target.set(c, 0, c);
    this.camera.position.set(c, Math.sin(elev) * dist, c + Math.cos(elev) * dist);
    this.controls.maxDistance = dist * 3;
    this.camera.far = dist * 6 + 100;
    this.camera.updateProjectionMatrix();
    this.controls.update();
  }

  resize() {
    const w = window.innerWidth;
    const h = window.innerHeight;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
  }

  // ---------------------------------------------------------------- frame loop

  frame() {
    const now = performance.now();
    const store = this.store;
    store.interpolate(now);

    if (this.following && this.selectedId !== null) {
      const slot = store.index.get(this.selectedId);
      if (slot !== undefined) {
        const t = this.controls.target;
        const dx = store.x[slot] - t.x;
        const dy = store.y[slot] - t.y;
        const dz = store.z[slot] - t.z;
        t.x += dx;
        t.y += dy;
        t.z += dz;
        this.camera.position.x += dx;
        this.camera.position.y += dy;
        this.camera.position.z += dz;
      }
    }
    this.controls.update();

    const dist = this.camera.position.distanceTo(this.controls.target);
    const near = Math.max(0.05, dist * 0.004);
    if (Math.abs(near - this.camera.near) > near * 0.1) {
      this.camera.near = near;
      this.camera.updateProjectionMatrix();
    }
    // Entities grow when the camera is far away so they stay visible on big maps.
    this.scale = Math.min(8, Math.max(1, dist / 60));
    this.camera.updateMatrixWorld();

    this.entities.update(store, this.camera, this.scale, this.selectedId);
    this.effects.update(store, now, this.scale);
    const t1 = performance.now();
    this.renderer.render(this.scene, this.camera);
    const t2 = performance.now();
    // smoothed CPU cost of the frame: state/instance updates, and issuing the draw calls
    this.updateMs = this.updateMs * 0.9 + (t1 - now) * 0.1;
    this.renderMs = this.renderMs * 0.9 + (t2 - t1) * 0.1;

    this.frames++;
    if (now - this.fpsT0 >= 1000) {
      this.fps = Math.round((this.frames * 1000) / (now - this.fpsT0));
      this.frames = 0;
      this.fpsT0 = now;
      this.statusDirty = true;
    }
    if (this.statusDirty) this.refreshStatus();
  }
}

const viewer = new Viewer();

// Read-only helpers for tests and the console.
window.viewer = Object.freeze({
  get packets() {
    return viewer.packets;
  },
  get tick() {
    return viewer.tick;
  },
  get selectedId() {
    return viewer.selectedId;
  },
  get mode() {
    return viewer.mode;
  },
  get overlay() {
    return viewer.overlayName;
  },
  get playing() {
    return viewer.playing;
  },
  get connected() {
    return !!viewer.conn && viewer.conn.open;
  },
  get fps() {
    return viewer.fps;
  },
  get stats() {
    const info = viewer.renderer.info.render;
    return {
      fps: viewer.fps,
      updateMs: viewer.updateMs,
      renderMs: viewer.renderMs,
      drawCalls: info.calls,
      triangles: info.triangles,
      entities: viewer.store.count,
      attacks: viewer.effects.total,
    };
  },
  entityIds() {
    return Array.from(viewer.store.ids.subarray(0, viewer.store.count));
  },
  screenPosition(id) {
    return viewer.screenPosition(id);
  },
  /** The fields of one entity as last received ({team, kind, health, ...}), or null when gone. */
  entity(id) {
    const slot = viewer.store.index.get(id);
    if (slot === undefined) return null;
    const out = {};
    for (const [name, col] of viewer.store.columns) out[name] = col[slot];
    return out;
  },
});

viewer.start();
