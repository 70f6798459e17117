// The 3D view: renderer, scene, camera and orbit controls, the terrain / entity / effect layers,
// and what one frame draws. No DOM besides the canvas, no session state.

import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import { AttackEffects } from './effects.js';
import { EntityRenderer } from './entities.js';
import { GameLayer } from './game.js';
import { Terrain } from './terrain.js';

export class SceneView {
  constructor(canvas) {
    this.canvas = canvas;
    this.renderer = new THREE.WebGLRenderer({ canvas, antialias: true, powerPreference: 'high-performance' });
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
    this.renderer.setClearColor(0x10151c);

    this.scene = new THREE.Scene();
    this.camera = new THREE.PerspectiveCamera(45, 1, 0.1, 4000);
    this.scene.add(new THREE.HemisphereLight(0xdfe9ff, 0x3a3428, 1.6));
    const sun = new THREE.DirectionalLight(0xffffff, 1.8);
    sun.position.set(-0.45, 0.8, -0.4);
    this.scene.add(sun);

    this.controls = new OrbitControls(this.camera, canvas);
    this.controls.enableDamping = true;
    this.controls.dampingFactor = 0.12;
    this.controls.screenSpacePanning = false; // pan along the ground
    this.controls.maxPolarAngle = Math.PI * 0.47;
    this.controls.minDistance = 2;
    this.controls.zoomToCursor = true; // wheel zooms towards the pointer, handy on big maps

    this.terrain = new Terrain(this.scene);
    this.entities = new EntityRenderer(this.scene);
    this.effects = new AttackEffects(this.scene);
    this.game = new GameLayer(this.scene, this.terrain); // a minigame's marks (game.js)
    this.raycaster = new THREE.Raycaster();
    this._v = new THREE.Vector3();
    this._v2 = new THREE.Vector2();

    this.mapSize = 64; // size of the map that frameMap() fits
    this.scale = 1; // entity size factor (entities grow when the camera is far away)
    this.frames = 0;
    this.fps = 0;
    this.fpsT0 = performance.now();
    this.updateMs = 0;
    this.renderMs = 0;

    this.resize();
    window.addEventListener('resize', () => this.resize());
  }

  /** Run `onFrame()` once per animation frame (requestAnimationFrame through three.js). */
  start(onFrame) {
    this.renderer.setAnimationLoop(onFrame);
  }

  resize() {
    const w = window.innerWidth;
    const h = window.innerHeight;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
  }

  /** Point the camera at the whole map (of `size` tiles a side; the last size when omitted). */
  frameMap(size = this.mapSize) {
    this.mapSize = size;
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

  /** Put the orbit target on (x, y, z), bringing the camera within `maxDistance` of it. */
  lookAt(x, y, z, maxDistance) {
    const target = this.controls.target;
    const offset = this._v.copy(this.camera.position).sub(target);
    target.set(x, y, z);
    if (offset.length() > maxDistance) offset.setLength(maxDistance);
    this.camera.position.copy(target).add(offset);
  }

  /** Move the orbit target to (x, y, z) and the camera with it (keeps the view angle and zoom). */
  track(x, y, z) {
    const t = this.controls.target;
    const p = this.camera.position;
    const dx = x - t.x;
    const dy = y - t.y;
    const dz = z - t.z;
    t.set(x, y, z);
    p.set(p.x + dx, p.y + dy, p.z + dz);
  }

  /** Id of the entity whose mesh is under the client point (clientX, clientY), or null. */
  pickEntity(clientX, clientY) {
    const rect = this.canvas.getBoundingClientRect();
    this._v2.set(((clientX - rect.left) / rect.width) * 2 - 1, -((clientY - rect.top) / rect.height) * 2 + 1);
    this.raycaster.setFromCamera(this._v2, this.camera);
    return this.entities.pick(this.raycaster);
  }

  /** CSS-pixel position of entity `id` of `store` as drawn in the last frame, or null. */
  screenPosition(store, id) {
    const slot = store.index.get(id);
    if (slot === undefined) return null;
    const v = this._v.set(store.x[slot], store.y[slot] + 0.4 * this.scale, store.z[slot]);
    v.project(this.camera);
    if (v.z > 1 || v.z < -1) return null;
    const rect = this.canvas.getBoundingClientRect();
    return { x: rect.left + ((v.x + 1) / 2) * rect.width, y: rect.top + ((1 - v.y) / 2) * rect.height };
  }

  /**
   * Draw one frame of `store` (already interpolated to `now`). Returns true when the fps figure
   * changed (once a second).
   */
  draw(store, now, selectedId) {
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

    this.entities.update(store, this.camera, this.scale, selectedId);
    this.effects.update(store, now, this.scale);
    this.game.update(store, this.scale);
    const t1 = performance.now();
    this.renderer.render(this.scene, this.camera);
    const t2 = performance.now();
    // smoothed CPU cost of the frame: state/instance updates, and issuing the draw calls
    this.updateMs = this.updateMs * 0.9 + (t1 - now) * 0.1;
    this.renderMs = this.renderMs * 0.9 + (t2 - t1) * 0.1;

    this.frames++;
    if (now - this.fpsT0 < 1000) return false;
    this.fps = Math.round((this.frames * 1000) / (now - this.fpsT0));
    this.frames = 0;
    this.fpsT0 = now;
    return true;
  }

  /** Renderer figures for window.viewer.stats. */
  get info() {
    return this.renderer.info.render;
  }
}
