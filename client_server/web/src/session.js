// One viewing session: the websocket, the packets it brings (docs/viewer_protocol.md) and the
// client state they build: the header, tick, playback state, overlay and the entity store.
// Packets are applied to the scene's layers here; the DOM hears about them through `hooks`.

import { Connection, decodeBase64, wsURL } from './connection.js';
import { EntityStore } from './state.js';

/** Replay list from GET /api/replays: accepts ["name", ...] or [{name, size, ticks}, ...]. */
export function normalizeReplays(data) {
  const list = Array.isArray(data) ? data : Array.isArray(data?.replays) ? data.replays : [];
  return list
    .map((item) => {
      if (typeof item === 'string') return { name: item };
      if (item && typeof item === 'object') {
        const name = item.name ?? item.file ?? item.filename;
        return name
          ? { name: String(name), bytes: item.bytes, size: item.size, ticks: item.ticks, config: item.config,
              unreadable: typeof item.unreadable === 'string' ? item.unreadable : null }
          : null;
      }
      return null;
    })
    .filter(Boolean);
}

/** The replays the server offers (normalized), or null when it cannot say. */
export async function fetchReplays() {
  try {
    const res = await fetch('/api/replays', { cache: 'no-store' });
    if (!res.ok) return null;
    return normalizeReplays(await res.json());
  } catch {
    return null;
  }
}

/** GET /api/health ({ok, live, replays}), or null when it cannot be read. */
export async function fetchHealth() {
  try {
    const res = await fetch('/api/health', { cache: 'no-store' });
    return res.ok ? await res.json() : null;
  } catch {
    return null;
  }
}

export class Session {
  /**
   * `view` holds the layers packets change (terrain, entities, effects). `hooks` are called after
   * each change: header(h), tick(msg), status(s), overlay(name, overlay) (overlay null: cleared
   * when name is null, no data at this tick otherwise), error(text), connection(text or null).
   */
  constructor(view, hooks) {
    this.view = view;
    this.hooks = hooks;
    this.store = new EntityStore();
    this.store.heightAt = (r, c) => view.terrain.heightAt(r, c);

    this.conn = null;
    this.mode = null; // 'live' | 'replay'
    this.replayName = null;
    this.header = null;
    this.roster = null; // {names, teamPolicy} when the header names the policies
    this.packets = 0;
    this.tick = null;
    this.ticks = null;
    this.playing = false;
    this.speed = 10;
    this.overlayName = null;
    this.game = null; // the minigame's state at this tick (the tick packets' `game`), null without one
    this.lastTickAt = 0;
    this.gapEma = 0; // smoothed ms between tick packets
  }

  get connected() {
    return !!this.conn && this.conn.open;
  }

  connect(mode, name) {
    if (this.conn) this.conn.close();
    this.mode = mode;
    this.replayName = name;
    const path = mode === 'replay' ? `/ws/replay/${encodeURIComponent(name)}` : '/ws/live';
    this.conn = new Connection(wsURL(path), {
      onPacket: (msg) => this.onPacket(msg),
      onOpen: () => this.hooks.connection(null),
      onClose: (delay) => this.hooks.connection(`connection closed — reconnecting in ${delay} s…`),
      onBadFrame: (text) => this.hooks.error(`unreadable frame: ${text}`),
    });
    this.conn.connect();
  }

  send(cmd) {
    if (!this.conn || !this.conn.send(cmd)) this.hooks.error('not connected');
  }

  /** Ask for overlay `name` (null: none). Clearing happens at once; the server confirms. */
  chooseOverlay(name) {
    this.send({ cmd: 'overlay', name });
    if (!name) this.clearOverlay();
  }

  clearOverlay() {
    this.view.terrain.setOverlay(null);
    this.overlayName = null;
    this.hooks.overlay(null, null);
  }

  onPacket(msg) {
    switch (msg.type) {
      case 'header':
        return this.onHeader(msg);
      case 'tick':
        return this.onTick(msg);
      case 'status':
        return this.onStatus(msg);
      case 'error':
        return this.hooks.error(String(msg.message ?? 'error'));
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
    const { terrain, entities, effects, game } = this.view;
    terrain.setMap(h, material);
    const policies = Array.isArray(h.config?.policies) ? h.config.policies.map(String) : null;
    const dealt = Array.isArray(h.config?.team_policy) ? h.config.team_policy.map(Number) : null;
    this.roster = policies ? { names: policies, teamPolicy: dealt } : null;
    entities.policies = this.roster;
    this.store.reset(h.fields);
    effects.reset();
    game.reset(this.roster);
    this.game = null;
    this.tick = h.tick ?? 0;
    this.ticks = h.ticks ?? null;
    this.overlayName = null;
    this.gapEma = 0;
    this.hooks.header(h);
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
    if (Array.isArray(msg.tiles) && msg.tiles.length) this.view.terrain.setTiles(msg.tiles);
    if (msg.overlay) this.onOverlay(msg.overlay);
    if (msg.game && typeof msg.game === 'object') {
      this.game = msg.game;
      this.view.game.setState(msg.game);
    }
    this.store.interpolate(now);
    if (Array.isArray(msg.attacks) && msg.attacks.length) {
      this.view.effects.add(msg.attacks, this.store, now, Math.min(700, Math.max(250, duration * 1.5)));
    }
    this.hooks.tick(msg);
  }

  onOverlay(ov) {
    if (!ov.name) {
      this.clearOverlay();
      return;
    }
    // data null: selected, but the server has no values for it at this tick (yet)
    this.view.terrain.setOverlay(ov.data ? decodeBase64(ov.data) : null);
    this.overlayName = ov.name;
    this.hooks.overlay(ov.name, ov.data ? ov : null);
  }

  onStatus(s) {
    if (typeof s.playing === 'boolean') this.playing = s.playing;
    if (typeof s.speed === 'number') this.speed = s.speed;
    if (typeof s.tick === 'number' && this.tick === null) this.tick = s.tick;
    if (s.ticks !== undefined) this.ticks = s.ticks;
    this.hooks.status(s);
  }
}
