// Attack effects: for every [attacker, target, style, damage] a short-lived line from the attacker
// plus a glowing projectile head (range/mage fly to the target; melee flashes at the target).
// Effects live in a fixed ring buffer of typed arrays; one LineSegments and one InstancedMesh
// draw them all.

import * as THREE from 'three';
import { STYLE_COLORS, linear } from './colors.js';

const MAX = 4096;
const STYLE_LINEAR = STYLE_COLORS.map(linear);

export class AttackEffects {
  constructor(scene) {
    this.attacker = new Int32Array(MAX);
    this.target = new Int32Array(MAX);
    this.style = new Int8Array(MAX);
    this.start = new Float64Array(MAX).fill(-1e9);
    this.dur = new Float32Array(MAX);
    // last known endpoints (used once an entity has been removed, e.g. killed by this attack)
    this.ends = new Float32Array(MAX * 6);
    this.next = 0;
    this.total = 0; // attacks seen since the last reset

    const geometry = new THREE.BufferGeometry();
    this.positions = new Float32Array(MAX * 2 * 3);
    this.colors = new Float32Array(MAX * 2 * 3);
    geometry.setAttribute('position', new THREE.BufferAttribute(this.positions, 3).setUsage(THREE.DynamicDrawUsage));
    geometry.setAttribute('color', new THREE.BufferAttribute(this.colors, 3).setUsage(THREE.DynamicDrawUsage));
    geometry.setDrawRange(0, 0);
    this.lines = new THREE.LineSegments(
      geometry,
      new THREE.LineBasicMaterial({ vertexColors: true, transparent: true, blending: THREE.AdditiveBlending, depthWrite: false }),
    );
    this.lines.frustumCulled = false;
    this.lines.name = 'attacks';
    this.lines.renderOrder = 4;

    this.heads = new THREE.InstancedMesh(
      new THREE.IcosahedronGeometry(0.14, 1),
      new THREE.MeshBasicMaterial({ color: 0xffffff, transparent: true, blending: THREE.AdditiveBlending, depthWrite: false }),
      MAX,
    );
    this.heads.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
    this.heads.instanceColor = new THREE.InstancedBufferAttribute(new Float32Array(MAX * 3), 3);
    this.heads.instanceColor.setUsage(THREE.DynamicDrawUsage);
    this.heads.frustumCulled = false;
    this.heads.count = 0;
    this.heads.name = 'projectiles';
    this.heads.renderOrder = 4;
    scene.add(this.lines, this.heads);
  }

  reset() {
    this.start.fill(-1e9);
    this.total = 0;
  }

  /** Queue effects from a packet's `attacks`: [[attacker_id, target_id, style, damage], ...]. */
  add(attacks, store, now, duration) {
    for (const a of attacks) {
      const i = this.next;
      this.next = (this.next + 1) % MAX;
      this.attacker[i] = a[0];
      this.target[i] = a[1];
      this.style[i] = a[2] >= 0 && a[2] <= 2 ? a[2] : 0;
      this.start[i] = now;
      this.dur[i] = duration;
      this.remember(i, store, true);
      this.total++;
    }
  }

  /** Copy the endpoints' current drawn positions (store.x/y/z must be interpolated). */
  remember(i, store, fresh = false) {
    const e = this.ends;
    const o = i * 6;
    const sa = store.index.get(this.attacker[i]);
    const st = store.index.get(this.target[i]);
    if (sa !== undefined) {
      e[o] = store.x[sa];
      e[o + 1] = store.y[sa];
      e[o + 2] = store.z[sa];
    }
    if (st !== undefined) {
      e[o + 3] = store.x[st];
      e[o + 4] = store.y[st];
      e[o + 5] = store.z[st];
    }
    if (fresh) {
      // An endpoint we never saw collapses onto the other one (the effect becomes a flash).
      if (sa === undefined) for (let k = 0; k < 3; k++) e[o + k] = e[o + 3 + k];
      if (st === undefined) for (let k = 0; k < 3; k++) e[o + 3 + k] = e[o + k];
      if (sa === undefined && st === undefined) this.start[i] = -1e9;
    }
  }

  update(store, now, scale) {
    const p = this.positions;
    const c = this.colors;
    const hm = this.heads.instanceMatrix.array;
    const hc = this.heads.instanceColor.array;
    const e = this.ends;
    const lift = 0.45 * scale;
    let nl = 0;
    let nh = 0;
    for (let i = 0; i < MAX; i++) {
      const age = (now - this.start[i]) / this.dur[i];
      if (!(age >= 0 && age < 1)) continue;
      this.remember(i, store); // track moving endpoints while both are alive
      const ax = e[i * 6], ay = e[i * 6 + 1] + lift, az = e[i * 6 + 2];
      const tx = e[i * 6 + 3], ty = e[i * 6 + 4] + lift, tz = e[i * 6 + 5];
      const col = STYLE_LINEAR[this.style[i]];
      const fade = 1 - age;
      const melee = this.style[i] === 0;
      // projectile head position along the line
      const f = melee ? 1 : Math.min(1, age * 1.6);
      const hx = ax + (tx - ax) * f;
      const hy = ay + (ty - ay) * f + (melee ? 0 : Math.sin(f * Math.PI) * 0.6 * scale);
      const hz = az + (tz - az) * f;
      const tail = melee ? 0 : Math.max(0, f - 0.35);
      let o = nl * 6;
      p[o] = ax + (tx - ax) * tail;
      p[o + 1] = ay + (ty - ay) * tail;
      p[o + 2] = az + (tz - az) * tail;
      p[o + 3] = hx;
      p[o + 4] = hy;
      p[o + 5] = hz;
      c[o] = col[0] * fade * 0.4; c[o + 1] = col[1] * fade * 0.4; c[o + 2] = col[2] * fade * 0.4;
      c[o + 3] = col[0] * fade; c[o + 4] = col[1] * fade; c[o + 5] = col[2] * fade;
      nl++;

      const s = scale * (melee ? 1.6 * (1 - age) + 0.4 : 1.0);
      o = nh * 16;
      hm[o] = s; hm[o + 1] = 0; hm[o + 2] = 0; hm[o + 3] = 0;
      hm[o + 4] = 0; hm[o + 5] = s; hm[o + 6] = 0; hm[o + 7] = 0;
      hm[o + 8] = 0; hm[o + 9] = 0; hm[o + 10] = s; hm[o + 11] = 0;
      hm[o + 12] = hx; hm[o + 13] = hy; hm[o + 14] = hz; hm[o + 15] = 1;
      hc[nh * 3] = col[0] * fade;
      hc[nh * 3 + 1] = col[1] * fade;
      hc[nh * 3 + 2] = col[2] * fade;
      nh++;
    }
    const g = this.lines.geometry;
    g.setDrawRange(0, nl * 2);
    if (nl) {
      for (const name of ['position', 'color']) {
        const attr = g.attributes[name];
        attr.clearUpdateRanges();
        attr.addUpdateRange(0, nl * 6);
        attr.needsUpdate = true;
      }
    }
    this.heads.count = nh;
    if (nh) {
      this.heads.instanceMatrix.clearUpdateRanges();
      this.heads.instanceMatrix.addUpdateRange(0, nh * 16);
      this.heads.instanceMatrix.needsUpdate = true;
      this.heads.instanceColor.clearUpdateRanges();
      this.heads.instanceColor.addUpdateRange(0, nh * 3);
      this.heads.instanceColor.needsUpdate = true;
    }
    this.active = nh;
  }
}
