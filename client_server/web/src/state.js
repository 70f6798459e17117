// Client-side entity state, merged from the columnar `tick` packets.
//
// Entities live in dense struct-of-arrays storage: slot 0..count-1, one typed array per field.
// `index` maps an entity id to its slot; removing an entity moves the last slot into the hole, so
// every per-frame loop is a straight walk over 0..count-1 with no allocation.
//
// Each entity also carries an interpolation segment: it is drawn moving from (fromX, fromY, fromZ)
// at `segStart` to its current tile (col + 0.5, surface height, row + 0.5) at `segStart + segDur`.

const TELEPORT_TILES = 3; // a jump longer than this (respawn, seek) snaps instead of sliding

const DEFAULTS = { team: -1, attack_style: -1, attack_target: 0, task: -1 };

export class EntityStore {
  constructor() {
    this.capacity = 0;
    this.count = 0;
    this.index = new Map(); // id -> slot
    this.ids = new Int32Array(0);
    this.columns = new Map(); // field name -> Float32Array(capacity)
    this.fromX = new Float32Array(0);
    this.fromY = new Float32Array(0);
    this.fromZ = new Float32Array(0);
    // Where the entity is drawn this frame (written by `interpolate`).
    this.x = new Float32Array(0);
    this.y = new Float32Array(0);
    this.z = new Float32Array(0);
    this.segStart = 0; // ms, performance.now() of the tick that started the current segment
    this.segDur = 100; // ms
    this.heightAt = () => 0; // (row, col) -> surface height, set by the terrain
    this.version = 0; // bumped on every applied packet (lets the UI refresh lazily)
    this.grow(256);
  }

  reset(fields) {
    this.count = 0;
    this.index.clear();
    this.columns.clear();
    for (const name of fields || []) if (name !== 'id') this.column(name);
    for (const name of ['row', 'col', 'health', 'max_health', 'team', 'kind']) this.column(name);
    this.version++;
  }

  grow(minCapacity) {
    let cap = Math.max(this.capacity, 16);
    while (cap < minCapacity) cap *= 2;
    if (cap === this.capacity) return;
    const resize = (arr, Ctor) => {
      const out = new Ctor(cap);
      out.set(arr.subarray(0, Math.min(arr.length, cap)));
      return out;
    };
    this.ids = resize(this.ids, Int32Array);
    for (const key of ['fromX', 'fromY', 'fromZ', 'x', 'y', 'z']) this[key] = resize(this[key], Float32Array);
    for (const [name, arr] of this.columns) this.columns.set(name, resize(arr, Float32Array));
    this.capacity = cap;
  }

  column(name) {
    let arr = this.columns.get(name);
    if (!arr) {
      arr = new Float32Array(this.capacity);
      const d = DEFAULTS[name];
      if (d) arr.fill(d);
      this.columns.set(name, arr);
    }
    return arr;
  }

  get(id, field) {
    const slot = this.index.get(id);
    if (slot === undefined) return undefined;
    const col = this.columns.get(field);
    return col ? col[slot] : undefined;
  }

  has(id) {
    return this.index.has(id);
  }

  /** Slot for `id`, creating the entity (with default field values) if it is new. */
  slotFor(id) {
    let slot = this.index.get(id);
    if (slot !== undefined) return slot;
    if (this.count >= this.capacity) this.grow(this.count + 1);
    slot = this.count++;
    this.ids[slot] = id;
    for (const [name, arr] of this.columns) arr[slot] = DEFAULTS[name] || 0;
    this.fromX[slot] = NaN; // marks "new": snapped to its tile when the packet is applied
    this.index.set(id, slot);
    return slot;
  }

  remove(id) {
    const slot = this.index.get(id);
    if (slot === undefined) return;
    const last = this.count - 1;
    if (slot !== last) {
      const lastId = this.ids[last];
      this.ids[slot] = lastId;
      for (const arr of this.columns.values()) arr[slot] = arr[last];
      this.fromX[slot] = this.fromX[last];
      this.fromY[slot] = this.fromY[last];
      this.fromZ[slot] = this.fromZ[last];
      this.x[slot] = this.x[last];
      this.y[slot] = this.y[last];
      this.z[slot] = this.z[last];
      this.index.set(lastId, slot);
    }
    this.index.delete(id);
    this.count = last;
  }

  /**
   * Merge one `tick` packet. `now` is performance.now(); `duration` the time (ms) the movement
   * to the new tiles should take on screen.
   */
  apply(packet, now, duration) {
    const full = !!packet.full;
    if (full) {
      this.count = 0;
      this.index.clear();
    } else {
      // Freeze every entity where it is drawn right now: that is where its next segment starts.
      this.interpolate(now);
      const n = this.count;
      this.fromX.set(this.x.subarray(0, n));
      this.fromY.set(this.y.subarray(0, n));
      this.fromZ.set(this.z.subarray(0, n));
    }

    // Removals first: an id listed in both `removed` and `entities` (e.g. it moved to another
    // server-side slot) is alive afterwards.
    if (Array.isArray(packet.removed)) for (const id of packet.removed) this.remove(id);

    const ents = packet.entities;
    const idCol = ents && ents.id;
    if (idCol && idCol.length) {
      const n = idCol.length;
      this.grow(this.count + n);
      const slots = new Int32Array(n);
      for (let k = 0; k < n; k++) slots[k] = this.slotFor(idCol[k]);
      for (const name in ents) {
        if (name === 'id') continue;
        const values = ents[name];
        if (!Array.isArray(values)) continue;
        const arr = this.column(name);
        const m = Math.min(n, values.length);
        for (let k = 0; k < m; k++) {
          const v = values[k];
          arr[slots[k]] = v === null ? NaN : v;
        }
      }
    }

    // New entities and long jumps start at their destination.
    const rows = this.column('row');
    const cols = this.column('col');
    for (let s = 0; s < this.count; s++) {
      const tx = cols[s] + 0.5;
      const tz = rows[s] + 0.5;
      const fx = this.fromX[s];
      if (full || Number.isNaN(fx) || Math.abs(fx - tx) > TELEPORT_TILES || Math.abs(this.fromZ[s] - tz) > TELEPORT_TILES) {
        this.fromX[s] = tx;
        this.fromZ[s] = tz;
        this.fromY[s] = this.heightAt(rows[s], cols[s]);
      }
    }
    this.segStart = now;
    this.segDur = Math.max(1, duration);
    this.version++;
  }

  /** Fill x/y/z with each entity's on-screen position at time `now` (ms). */
  interpolate(now) {
    let t = (now - this.segStart) / this.segDur;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    const rows = this.columns.get('row');
    const cols = this.columns.get('col');
    if (!rows || !cols) return;
    const { fromX, fromY, fromZ, x, y, z } = this;
    const heightAt = this.heightAt;
    for (let s = 0, n = this.count; s < n; s++) {
      const r = rows[s];
      const c = cols[s];
      const tx = c + 0.5;
      const tz = r + 0.5;
      const ty = heightAt(r, c);
      x[s] = fromX[s] + (tx - fromX[s]) * t;
      y[s] = fromY[s] + (ty - fromY[s]) * t;
      z[s] = fromZ[s] + (tz - fromZ[s]) * t;
    }
  }
}
