// Agents and NPCs as instanced meshes (one draw call per kind), plus one instanced mesh of
// camera-facing health bars. Every frame writes instance matrices and colours straight into the
// meshes' typed arrays from the EntityStore's interpolated positions: no per-entity objects.

import * as THREE from 'three';
import { NPC_COLORS, PALETTE, colorKey, hex, linear, teamColor, unit } from './colors.js';

const NPC_LINEAR = NPC_COLORS.map(linear);
const EMPTY_LINEAR = linear(unit(PALETTE.mark.empty)); // a health bar's back plate

function makeInstanced(geometry, material, capacity, name) {
  const mesh = new THREE.InstancedMesh(geometry, material, capacity);
  mesh.name = name;
  mesh.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
  mesh.instanceColor = new THREE.InstancedBufferAttribute(new Float32Array(capacity * 3).fill(1), 3);
  mesh.instanceColor.setUsage(THREE.DynamicDrawUsage);
  mesh.frustumCulled = false; // instances move every frame; the static bounding sphere would be wrong
  mesh.count = 0;
  return mesh;
}

export class EntityRenderer {
  constructor(scene) {
    this.scene = scene;

    // Players: a capsule standing on the tile. NPCs: an octahedron hovering over it.
    const player = new THREE.CapsuleGeometry(0.2, 0.38, 4, 10);
    player.translate(0, 0.4, 0);
    const npc = new THREE.OctahedronGeometry(0.3, 0);
    npc.scale(1, 1.25, 1);
    npc.translate(0, 0.42, 0);
    const bar = new THREE.PlaneGeometry(1, 1);

    this.materials = {
      player: new THREE.MeshLambertMaterial({ color: 0xffffff }),
      npc: new THREE.MeshLambertMaterial({ color: 0xffffff, flatShading: true }),
      bar: new THREE.MeshBasicMaterial({ color: 0xffffff, side: THREE.DoubleSide, depthTest: true }),
    };
    this.geometries = { player, npc, bar };
    this.policies = null; // the header's roster {names, teamPolicy}: players are coloured by policy when there are several
    this.players = null;
    this.npcs = null;
    this.bars = null;
    this.playerIds = new Int32Array(0); // instance index -> entity id, as drawn last frame
    this.npcIds = new Int32Array(0);
    this.capacity = 0;
    this.ensureCapacity(1024);

    // Selection marker: a ring on the ground under the selected entity.
    const ring = new THREE.RingGeometry(0.42, 0.55, 32);
    ring.rotateX(-Math.PI / 2);
    // Drawn after the terrain without depth test (slopes would cut it), before the entities.
    this.ring = new THREE.Mesh(
      ring,
      new THREE.MeshBasicMaterial({ color: hex(PALETTE.mark.selection), side: THREE.DoubleSide, depthTest: false,
                                    depthWrite: false }),
    );
    this.ring.visible = false;
    this.ring.renderOrder = 1;
    scene.add(this.ring);

    this.scale = 1;
    this._right = new THREE.Vector3();
    this._up = new THREE.Vector3();
    this._fwd = new THREE.Vector3();
  }

  ensureCapacity(n) {
    if (n <= this.capacity) return;
    let cap = Math.max(this.capacity, 256);
    while (cap < n) cap *= 2;
    for (const key of ['players', 'npcs', 'bars']) {
      if (this[key]) {
        this.scene.remove(this[key]);
        this[key].dispose();
      }
    }
    this.players = makeInstanced(this.geometries.player, this.materials.player, cap, 'players');
    this.npcs = makeInstanced(this.geometries.npc, this.materials.npc, cap, 'npcs');
    this.bars = makeInstanced(this.geometries.bar, this.materials.bar, cap * 2, 'healthbars');
    this.players.renderOrder = 2;
    this.npcs.renderOrder = 2;
    this.bars.renderOrder = 3;
    this.scene.add(this.players, this.npcs, this.bars);
    this.playerIds = new Int32Array(cap);
    this.npcIds = new Int32Array(cap);
    this.capacity = cap;
  }

  /**
   * Write all instances for this frame. `store` has already been interpolated; `camera` orients
   * the health bars; `scale` enlarges everything when the camera is far away.
   */
  update(store, camera, scale, selectedId) {
    const n = store.count;
    this.ensureCapacity(n);
    this.scale = scale;
    const kinds = store.columns.get('kind');
    const teams = store.columns.get('team');
    const health = store.columns.get('health');
    const maxHealth = store.columns.get('max_health');
    const { x, y, z, ids } = store;

    const pm = this.players.instanceMatrix.array;
    const pc = this.players.instanceColor.array;
    const nm = this.npcs.instanceMatrix.array;
    const nc = this.npcs.instanceColor.array;
    const bm = this.bars.instanceMatrix.array;
    const bc = this.bars.instanceColor.array;

    // Camera basis for billboarded bars.
    const e = camera.matrixWorld.elements;
    const rx = e[0], ry = e[1], rz = e[2];
    const ux = e[4], uy = e[5], uz = e[6];
    const fx = e[8], fy = e[9], fz = e[10];

    const barW = 0.8 * scale;
    const barH = 0.09 * scale;
    const barLift = 1.0 * scale;
    const back = 0.02 * scale;

    let np = 0;
    let nn = 0;
    let nb = 0;
    let selSlot = -1;
    for (let s = 0; s < n; s++) {
      const px = x[s];
      const py = y[s];
      const pz = z[s];
      const kind = kinds[s];
      let o;
      if (kind === 0) {
        o = np * 16;
        teamColor(colorKey(teams[s], this.policies), pc, np * 3);
        this.playerIds[np] = ids[s];
        np++;
        pm[o] = scale; pm[o + 1] = 0; pm[o + 2] = 0; pm[o + 3] = 0;
        pm[o + 4] = 0; pm[o + 5] = scale; pm[o + 6] = 0; pm[o + 7] = 0;
        pm[o + 8] = 0; pm[o + 9] = 0; pm[o + 10] = scale; pm[o + 11] = 0;
        pm[o + 12] = px; pm[o + 13] = py; pm[o + 14] = pz; pm[o + 15] = 1;
      } else {
        o = nn * 16;
        const c = NPC_LINEAR[kind >= 1 && kind <= 3 ? kind : 0];
        nc[nn * 3] = c[0];
        nc[nn * 3 + 1] = c[1];
        nc[nn * 3 + 2] = c[2];
        this.npcIds[nn] = ids[s];
        nn++;
        nm[o] = scale; nm[o + 1] = 0; nm[o + 2] = 0; nm[o + 3] = 0;
        nm[o + 4] = 0; nm[o + 5] = scale; nm[o + 6] = 0; nm[o + 7] = 0;
        nm[o + 8] = 0; nm[o + 9] = 0; nm[o + 10] = scale; nm[o + 11] = 0;
        nm[o + 12] = px; nm[o + 13] = py; nm[o + 14] = pz; nm[o + 15] = 1;
      }
      if (ids[s] === selectedId) selSlot = s;

      // Health bar: a dark full-width back plate and a coloured front plate scaled by health.
      const mh = maxHealth[s];
      let frac = mh > 0 ? health[s] / mh : 0;
      frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
      const by = py + barLift;
      // back plate (slightly behind the front one, towards the camera's far side)
      o = nb * 16;
      bm[o] = rx * barW; bm[o + 1] = ry * barW; bm[o + 2] = rz * barW; bm[o + 3] = 0;
      bm[o + 4] = ux * barH; bm[o + 5] = uy * barH; bm[o + 6] = uz * barH; bm[o + 7] = 0;
      bm[o + 8] = fx; bm[o + 9] = fy; bm[o + 10] = fz; bm[o + 11] = 0;
      bm[o + 12] = px - fx * back; bm[o + 13] = by - fy * back; bm[o + 14] = pz - fz * back; bm[o + 15] = 1;
      bc[nb * 3] = EMPTY_LINEAR[0]; bc[nb * 3 + 1] = EMPTY_LINEAR[1]; bc[nb * 3 + 2] = EMPTY_LINEAR[2];
      nb++;
      if (frac > 0) {
        o = nb * 16;
        const w = barW * frac;
        const shift = (barW - w) * 0.5; // keep the bar left-aligned
        bm[o] = rx * w; bm[o + 1] = ry * w; bm[o + 2] = rz * w; bm[o + 3] = 0;
        bm[o + 4] = ux * barH; bm[o + 5] = uy * barH; bm[o + 6] = uz * barH; bm[o + 7] = 0;
        bm[o + 8] = fx; bm[o + 9] = fy; bm[o + 10] = fz; bm[o + 11] = 0;
        bm[o + 12] = px - rx * shift; bm[o + 13] = by - ry * shift; bm[o + 14] = pz - rz * shift; bm[o + 15] = 1;
        // red -> yellow -> green (linear RGB)
        const r = frac < 0.5 ? 1 : 2 * (1 - frac);
        const g = frac < 0.5 ? 2 * frac : 1;
        bc[nb * 3] = r * r * 0.9;
        bc[nb * 3 + 1] = g * g * 0.75;
        bc[nb * 3 + 2] = 0.02;
        nb++;
      }
    }

    this.finish(this.players, np);
    this.finish(this.npcs, nn);
    this.finish(this.bars, nb);

    if (selSlot >= 0) {
      this.ring.visible = true;
      this.ring.position.set(x[selSlot], y[selSlot] + 0.03, z[selSlot]);
      this.ring.scale.setScalar(scale);
    } else {
      this.ring.visible = false;
    }
  }

  finish(mesh, count) {
    mesh.count = count;
    if (count === 0) return;
    mesh.instanceMatrix.clearUpdateRanges();
    mesh.instanceMatrix.addUpdateRange(0, count * 16);
    mesh.instanceMatrix.needsUpdate = true;
    mesh.instanceColor.clearUpdateRanges();
    mesh.instanceColor.addUpdateRange(0, count * 3);
    mesh.instanceColor.needsUpdate = true;
  }

  /** Raycast the player and NPC meshes; returns the entity id hit, or null. */
  pick(raycaster) {
    const hits = [];
    for (const [mesh, ids] of [
      [this.players, this.playerIds],
      [this.npcs, this.npcIds],
    ]) {
      if (!mesh.count) continue;
      mesh.computeBoundingSphere();
      const found = raycaster.intersectObject(mesh, false);
      for (const h of found) if (h.instanceId !== undefined && h.instanceId < mesh.count) hits.push([h.distance, ids[h.instanceId]]);
    }
    if (!hits.length) return null;
    hits.sort((a, b) => a[0] - b[0]);
    return hits[0][1];
  }
}
