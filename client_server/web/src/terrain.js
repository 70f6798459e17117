// The whole map as ONE mesh: a (size+1)^2 vertex grid whose heights and colours come from data
// textures, so a 1056x1056 map is a single draw call and a tile change is a 4-byte texture update.
//
//   colour texture (RGBA8, size x size): rgb = material colour, a = quantized height of the tile
//   overlay texture (R8, size x size):   heatmap value 0..255, mapped through a 256x1 colour map
//
// The vertex shader lifts each grid corner to the mean height of its four tiles; the fragment
// shader colours each tile flat from its texel, blends the overlay on top, shades with a
// per-pixel face normal and draws faint tile borders when zoomed in.

import * as THREE from 'three';
import { colormapRGBA } from './colors.js';

// Height of a tile by material name (world units; a tile is 1x1).
const HEIGHT_BY_NAME = {
  water: -0.35,
  lava: -0.15,
  void: -0.6,
  grass: 0.0,
  scrub: 0.04,
  forest: 0.18,
  tree: 0.18,
  stone: 0.85,
  rock: 0.85,
  ore: 0.6,
};
const H_MIN = -0.6;
const H_SPAN = 2.0; // heights are quantized into the colour texture's alpha over [H_MIN, H_MIN + H_SPAN]

const VERTEX = /* glsl */ `
uniform sampler2D uColor;
uniform float uSize;
varying vec3 vWorld;
varying vec2 vCell;

float tileHeight(ivec2 c) {
  int n = int(uSize) - 1;
  c = clamp(c, ivec2(0), ivec2(n));
  return ${H_MIN.toFixed(4)} + texelFetch(uColor, c, 0).a * ${H_SPAN.toFixed(4)};
}

void main() {
  ivec2 v = ivec2(position.xz + 0.5); // grid corner (x = column, z = row)
  float h = 0.25 * (tileHeight(v) + tileHeight(v - ivec2(1, 0)) +
                    tileHeight(v - ivec2(0, 1)) + tileHeight(v - ivec2(1, 1)));
  vec4 world = modelMatrix * vec4(position.x, h, position.z, 1.0);
  vWorld = world.xyz;
  vCell = position.xz;
  gl_Position = projectionMatrix * viewMatrix * world;
}
`;

const FRAGMENT = /* glsl */ `
uniform sampler2D uColor;
uniform sampler2D uOverlay;
uniform sampler2D uColormap;
uniform float uSize;
uniform float uOverlayOn;
uniform float uOverlayAlpha;
uniform vec3 uLightDir;
varying vec3 vWorld;
varying vec2 vCell;

void main() {
  int n = int(uSize) - 1;
  ivec2 c = clamp(ivec2(floor(vCell)), ivec2(0), ivec2(n));
  vec3 base = texelFetch(uColor, c, 0).rgb;
  if (uOverlayOn > 0.5) {
    float v = texelFetch(uOverlay, c, 0).r;
    vec3 heat = texture2D(uColormap, vec2((v * 255.0 + 0.5) / 256.0, 0.5)).rgb;
    // the terrain underneath turns grey so the colour map reads unambiguously
    vec3 grey = vec3(dot(base, vec3(0.299, 0.587, 0.114)) * 0.85);
    base = mix(grey, heat, uOverlayAlpha);
  }
  vec3 nrm = normalize(cross(dFdx(vWorld), dFdy(vWorld)));
  if (nrm.y < 0.0) nrm = -nrm;
  float diffuse = max(dot(nrm, uLightDir), 0.0);
  vec3 color = base * (0.5 + 0.6 * diffuse);

  // Tile borders, faded out once a tile is only a few pixels wide.
  vec2 w = fwidth(vCell);
  vec2 d = abs(fract(vCell) - 0.5);
  vec2 line = smoothstep(vec2(0.5) - 1.2 * w, vec2(0.5), d);
  float fade = 1.0 - smoothstep(0.06, 0.2, max(w.x, w.y));
  color *= 1.0 - 0.22 * max(line.x, line.y) * fade;

  gl_FragColor = vec4(color, 1.0);
}
`;

function decodeColors(header) {
  // colors: {"0": [r, g, b], ...}; materials: {"0": "lava", ...}
  const colors = new Uint8Array(256 * 3).fill(128);
  const heights = new Float32Array(256);
  const names = [];
  for (const [k, rgb] of Object.entries(header.colors || {})) {
    const m = Number(k) & 255;
    colors[m * 3] = rgb[0];
    colors[m * 3 + 1] = rgb[1];
    colors[m * 3 + 2] = rgb[2];
  }
  for (const [k, name] of Object.entries(header.materials || {})) {
    const m = Number(k) & 255;
    names[m] = name;
    const h = HEIGHT_BY_NAME[String(name).toLowerCase()];
    heights[m] = h === undefined ? 0 : h;
  }
  return { colors, heights, names };
}

export class Terrain {
  constructor(scene) {
    this.scene = scene;
    this.size = 0;
    this.mesh = null;
    this.material = null;
    this.colorTex = null;
    this.overlayTex = null;
    this.materialIds = new Uint8Array(0);
    this.tileHeight = new Float32Array(0); // per tile
    this.surface = new Float32Array(0); // height of the rendered surface at each tile centre
    this.colormapTex = new THREE.DataTexture(colormapRGBA(), 256, 1, THREE.RGBAFormat, THREE.UnsignedByteType);
    this.colormapTex.magFilter = THREE.LinearFilter;
    this.colormapTex.minFilter = THREE.LinearFilter;
    this.colormapTex.needsUpdate = true;
    this.overlayOn = false;
    this.overlayAlpha = 0.75;
    this.palette = null;
  }

  /** Build (or rebuild) the mesh from a `header` packet and its decoded material bytes. */
  setMap(header, materialBytes) {
    const size = header.size | 0;
    this.palette = decodeColors(header);
    if (size !== this.size || !this.mesh) this.build(size);
    this.materialIds.set(materialBytes.subarray(0, size * size));
    const { colors, heights } = this.palette;
    const data = this.colorTex.image.data;
    for (let i = 0, n = size * size; i < n; i++) {
      const m = this.materialIds[i];
      data[i * 4] = colors[m * 3];
      data[i * 4 + 1] = colors[m * 3 + 1];
      data[i * 4 + 2] = colors[m * 3 + 2];
      data[i * 4 + 3] = this.quantize(heights[m]);
      this.tileHeight[i] = H_MIN + (data[i * 4 + 3] / 255) * H_SPAN;
    }
    this.colorTex.clearUpdateRanges();
    this.fullUploadPending = true;
    this.colorTex.needsUpdate = true;
    for (let r = 0; r < size; r++) for (let c = 0; c < size; c++) this.updateSurface(r, c);
    this.setOverlay(null);
  }

  quantize(h) {
    return Math.max(0, Math.min(255, Math.round(((h - H_MIN) / H_SPAN) * 255)));
  }

  build(size) {
    if (this.mesh) {
      this.scene.remove(this.mesh);
      this.mesh.geometry.dispose();
      this.material.dispose();
      this.colorTex.dispose();
      this.overlayTex.dispose();
    }
    this.size = size;
    this.materialIds = new Uint8Array(size * size);
    this.tileHeight = new Float32Array(size * size);
    this.surface = new Float32Array(size * size);

    this.colorTex = new THREE.DataTexture(new Uint8Array(size * size * 4), size, size, THREE.RGBAFormat, THREE.UnsignedByteType);
    this.overlayTex = new THREE.DataTexture(new Uint8Array(size * size), size, size, THREE.RedFormat, THREE.UnsignedByteType);
    for (const t of [this.colorTex, this.overlayTex]) {
      t.magFilter = THREE.NearestFilter;
      t.minFilter = THREE.NearestFilter;
      t.generateMipmaps = false;
      t.unpackAlignment = 1;
      t.needsUpdate = true;
    }
    // Until the whole colour texture has been uploaded once after a (re)load, tile changes must
    // not be sent as partial ranges (the partial path would skip everything else).
    this.fullUploadPending = true;
    this.colorTex.onUpdate = () => {
      this.fullUploadPending = false;
    };

    // Grid of (size+1)^2 corners; only x and z are stored, y comes from the colour texture.
    const v = size + 1;
    const pos = new Float32Array(v * v * 3);
    for (let j = 0, p = 0; j < v; j++) {
      for (let i = 0; i < v; i++, p += 3) {
        pos[p] = i;
        pos[p + 2] = j;
      }
    }
    const index = new Uint32Array(size * size * 6);
    for (let j = 0, q = 0; j < size; j++) {
      for (let i = 0; i < size; i++, q += 6) {
        const a = j * v + i;
        const b = a + 1;
        const c = a + v;
        const d = c + 1;
        index[q] = a;
        index[q + 1] = c;
        index[q + 2] = b;
        index[q + 3] = b;
        index[q + 4] = c;
        index[q + 5] = d;
      }
    }
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute('position', new THREE.BufferAttribute(pos, 3));
    geometry.setIndex(new THREE.BufferAttribute(index, 1));
    geometry.boundingSphere = new THREE.Sphere(new THREE.Vector3(size / 2, 0, size / 2), size * 0.75);
    geometry.boundingBox = new THREE.Box3(new THREE.Vector3(0, H_MIN, 0), new THREE.Vector3(size, H_MIN + H_SPAN, size));

    this.material = new THREE.ShaderMaterial({
      vertexShader: VERTEX,
      fragmentShader: FRAGMENT,
      uniforms: {
        uColor: { value: this.colorTex },
        uOverlay: { value: this.overlayTex },
        uColormap: { value: this.colormapTex },
        uSize: { value: size },
        uOverlayOn: { value: 0 },
        uOverlayAlpha: { value: this.overlayAlpha },
        uLightDir: { value: new THREE.Vector3(-0.45, 0.8, -0.4).normalize() },
      },
    });
    this.mesh = new THREE.Mesh(geometry, this.material);
    this.mesh.name = 'terrain';
    this.mesh.matrixAutoUpdate = false;
    this.scene.add(this.mesh);
  }

  /** Height of the rendered surface at the centre of tile (row, col): mean of its 4 corners. */
  updateSurface(r, c) {
    const size = this.size;
    const th = this.tileHeight;
    const h = (rr, cc) => th[Math.min(size - 1, Math.max(0, rr)) * size + Math.min(size - 1, Math.max(0, cc))];
    let s = 4 * h(r, c);
    s += 2 * (h(r - 1, c) + h(r + 1, c) + h(r, c - 1) + h(r, c + 1));
    s += h(r - 1, c - 1) + h(r - 1, c + 1) + h(r + 1, c - 1) + h(r + 1, c + 1);
    this.surface[r * size + c] = s / 16;
  }

  heightAt(row, col) {
    const size = this.size;
    if (!size) return 0;
    const r = row < 0 ? 0 : row >= size ? size - 1 : row | 0;
    const c = col < 0 ? 0 : col >= size ? size - 1 : col | 0;
    return this.surface[r * size + c];
  }

  /** Apply `tiles`: [[flat_index, material], ...]. */
  setTiles(tiles) {
    if (!this.mesh || !tiles || !tiles.length) return;
    const size = this.size;
    const { colors, heights } = this.palette;
    const data = this.colorTex.image.data;
    const partial = !this.fullUploadPending && tiles.length <= 4096;
    if (!partial) this.colorTex.clearUpdateRanges();
    for (const t of tiles) {
      const i = t[0] | 0;
      const m = t[1] & 255;
      if (i < 0 || i >= size * size) continue;
      this.materialIds[i] = m;
      data[i * 4] = colors[m * 3];
      data[i * 4 + 1] = colors[m * 3 + 1];
      data[i * 4 + 2] = colors[m * 3 + 2];
      data[i * 4 + 3] = this.quantize(heights[m]);
      const old = this.tileHeight[i];
      this.tileHeight[i] = H_MIN + (data[i * 4 + 3] / 255) * H_SPAN;
      if (partial) this.colorTex.addUpdateRange(i * 4, 4);
      if (old !== this.tileHeight[i]) {
        const r = Math.floor(i / size);
        const c = i % size;
        for (let dr = -1; dr <= 1; dr++) {
          for (let dc = -1; dc <= 1; dc++) {
            const rr = r + dr;
            const cc = c + dc;
            if (rr >= 0 && rr < size && cc >= 0 && cc < size) this.updateSurface(rr, cc);
          }
        }
      }
    }
    if (!partial) this.fullUploadPending = true;
    this.colorTex.needsUpdate = true;
  }

  /** Show a quantized heatmap (Uint8Array of size*size) or clear it with null. */
  setOverlay(bytes) {
    if (!this.mesh) return;
    if (bytes && bytes.length >= this.size * this.size) {
      this.overlayTex.image.data.set(bytes.subarray(0, this.size * this.size));
      this.overlayTex.needsUpdate = true;
      this.overlayOn = true;
    } else {
      this.overlayOn = false;
    }
    this.material.uniforms.uOverlayOn.value = this.overlayOn ? 1 : 0;
  }

  setOverlayAlpha(a) {
    this.overlayAlpha = a;
    if (this.material) this.material.uniforms.uOverlayAlpha.value = a;
  }

  materialName(row, col) {
    if (!this.size || !this.palette) return '';
    const m = this.materialIds[row * this.size + col];
    return this.palette.names[m] || String(m);
  }
}
