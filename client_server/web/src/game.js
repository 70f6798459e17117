// Minigames (nmmo.games): the `#game-state` panel that says the game's numbers in words, and the
// scene layer that marks what the game is about: the centre tile (race to the centre, king of the
// hill: in the holder team's colour), the fog's edge (sandwich: a square outline) and a marker above
// every live king (protect the king). Both read the `game` entry of tick packets (the server's
// `packets.game_field`), which is untrusted: every field is checked before it is used.

import * as THREE from 'three';
import { PALETTE, colorKey, cssColor, hex, teamSRGB, unit } from './colors.js';

const $ = (id) => document.getElementById(id);
const NONE = 1e6; // what the race's `nearest` holds for a team with nobody alive

const isInt = (v) => Number.isInteger(v);
const ints = (v) => (Array.isArray(v) ? v.filter(isInt) : []);
const teamList = (teams) => teams.map((t) => `team ${t}`).join(', ');

/** The panel's lines for a game state: [{text, team?}] (`team`: a team the line is about, for its swatch). */
export function describeGame(state) {
  if (!state || typeof state !== 'object') return [];
  const lines = [];
  const alive = ints(state.alive);
  const winners = ints(state.winners);
  const game = String(state.game ?? '');
  if (game === 'king_of_the_hill') {
    const holder = isInt(state.holder) ? state.holder : -1;
    const hold = isInt(state.hold) ? state.hold : '?';
    if (holder >= 0) lines.push({ text: `team ${holder} holds the hill: held ${state.held | 0}/${hold} ticks`, team: holder });
    else lines.push({ text: `nobody holds the hill (hold it ${hold} ticks to win)` });
  } else if (game === 'race_to_centre') {
    const nearest = ints(state.nearest);
    let best = -1;
    nearest.forEach((d, t) => {
      if (d < NONE && (best < 0 || d < nearest[best])) best = t;
    });
    if (best >= 0) lines.push({ text: `leader: team ${best}, ${nearest[best]} tiles from the centre`, team: best });
    else lines.push({ text: 'nobody is racing' });
  } else if (game === 'protect_the_king') {
    const kings = ints(state.king_alive);
    const live = kings.flatMap((a, t) => (a ? [t] : []));
    const lost = kings.flatMap((a, t) => (a ? [] : [t]));
    lines.push({ text: `kings alive: ${live.length} of ${kings.length}` + (lost.length ? ` (fallen: ${teamList(lost)})` : '') });
  } else if (game === 'sandwich' && isInt(state.fog_radius)) {
    lines.push({ text: `fog radius: ${state.fog_radius} tiles around the centre` });
  }
  if (alive.length) {
    const standing = alive.filter((n) => n > 0).length;
    lines.push({ text: `teams alive: ${standing} of ${alive.length} (${alive.reduce((a, b) => a + b, 0)} players)` });
  }
  if (winners.length) lines.push({ text: `${winners.length > 1 ? 'winners' : 'winner'}: ${teamList(winners)}`, team: winners[0], winner: true });
  return lines;
}

/** The `#game-state` panel: the game's title and `describeGame`'s lines; hidden without a game. */
export class GamePanel {
  constructor() {
    this.el = $('game-state');
    this.title = $('game-title');
    this.body = $('game-lines');
    this.roster = null;
    this.last = '';
  }

  /** A new header: its game (`{name, title}`, or nothing) and its roster (team colours). */
  reset(game, roster) {
    this.roster = roster;
    this.last = '';
    const known = game && typeof game === 'object' && game.name;
    this.el.hidden = !known;
    this.title.textContent = known ? String(game.title || game.name) : '';
    this.body.replaceChildren();
  }

  show(state) {
    if (!state || typeof state !== 'object') return;
    const key = JSON.stringify(state);
    if (key === this.last) return;
    this.last = key;
    if (typeof state.title === 'string' && state.title) this.title.textContent = state.title;
    this.el.hidden = false;
    const rows = describeGame(state).map((line) => {
      const div = document.createElement('div');
      div.className = line.winner ? 'game-line winner' : 'game-line';
      if (isInt(line.team) && line.team >= 0) {
        const swatch = document.createElement('span');
        swatch.className = 'swatch';
        swatch.style.background = cssColor(teamSRGB(colorKey(line.team, this.roster)));
        div.append(swatch);
      }
      div.append(line.text);
      return div;
    });
    this.body.replaceChildren(...rows);
  }
}

/** A flat square frame around the origin (on the ground plane), from `inner` to `outer` from its centre. */
function squareFrame(inner, outer) {
  const shape = new THREE.Shape().moveTo(-outer, -outer).lineTo(outer, -outer).lineTo(outer, outer).lineTo(-outer, outer);
  shape.holes.push(new THREE.Path().moveTo(-inner, -inner).lineTo(-inner, inner).lineTo(inner, inner).lineTo(inner, -inner));
  return new THREE.ShapeGeometry(shape).rotateX(Math.PI / 2);
}

/** The game's marks in the scene: centre tile, fog edge, kings' markers. */
export class GameLayer {
  constructor(scene, terrain) {
    this.terrain = terrain;
    this.group = new THREE.Group();
    this.group.name = 'game';
    this.group.visible = false;
    scene.add(this.group);
    const flat = (geometry) => geometry.rotateX(-Math.PI / 2);
    // drawn after the terrain without depth test (slopes would cut them), before the entities
    const overlay = (color, opacity) =>
      new THREE.MeshBasicMaterial({ color, transparent: true, opacity, side: THREE.DoubleSide, depthTest: false,
                                    depthWrite: false });

    // the centre: the tile, a frame around it and a beacon above it (visible from afar)
    this.centre = new THREE.Group();
    this.tile = new THREE.Mesh(flat(new THREE.PlaneGeometry(1, 1)), overlay(hex(PALETTE.mark.centre), 0.8));
    this.tile.position.y = 0.06;
    this.frame = new THREE.Mesh(squareFrame(0.5, 0.85), this.tile.material);
    this.frame.position.y = 0.06;
    this.beacon = new THREE.Mesh(new THREE.CylinderGeometry(0.12, 0.12, 6, 8), overlay(hex(PALETTE.mark.centre), 0.5));
    this.beacon.position.y = 3;
    for (const mesh of [this.tile, this.frame, this.beacon]) mesh.renderOrder = 1;
    this.centre.add(this.tile, this.frame, this.beacon);
    this.group.add(this.centre);

    // the fog's edge: a square frame, rebuilt when the radius changes
    this.fog = new THREE.Mesh(new THREE.BufferGeometry(), overlay(hex(PALETTE.mark.fog), 0.8));
    this.fog.renderOrder = 1;
    this.fogRadius = null;
    this.group.add(this.fog);

    // kings: a gold cone pointing down above each live king
    this.kingGeometry = new THREE.ConeGeometry(0.3, 0.6, 12).rotateX(Math.PI);
    this.kingMaterial = new THREE.MeshLambertMaterial({ color: hex(PALETTE.mark.centre), emissive: 0x553300 });
    this.kings = [];
    this.kingIds = [];
    this.state = null;
    this.roster = null;
  }

  reset(roster) {
    this.state = null;
    this.roster = roster;
    this.group.visible = false;
    this.kingIds = [];
    this.fogRadius = null; // rebuilt for the next game's centre
  }

  setState(state) {
    if (!state || typeof state !== 'object') return;
    this.state = state;
    this.group.visible = true;
    const centre = ints(state.centre);
    const game = String(state.game ?? '');
    const onCentre = centre.length === 2 && (game === 'race_to_centre' || game === 'king_of_the_hill');
    this.centre.visible = onCentre;
    if (onCentre) {
      const [row, col] = centre;
      this.centre.position.set(col + 0.5, this.terrain.heightAt(row, col), row + 0.5);
      const holder = game === 'king_of_the_hill' && isInt(state.holder) ? state.holder : -1;
      const rgb = holder >= 0 ? teamSRGB(colorKey(holder, this.roster)) : unit(PALETTE.mark.centre);
      this.tile.material.color.setRGB(rgb[0], rgb[1], rgb[2], THREE.SRGBColorSpace);
      this.beacon.material.color.copy(this.tile.material.color);
    }
    this.setFog(centre, isInt(state.fog_radius) ? state.fog_radius : null);
    this.kingIds = Array.isArray(state.king_ids) ? state.king_ids.filter(isInt) : [];
  }

  setFog(centre, radius) {
    this.fog.visible = radius !== null && radius >= 0 && centre.length === 2;
    if (!this.fog.visible || radius === this.fogRadius) return;
    this.fogRadius = radius;
    const [row, col] = centre;
    const inner = radius + 0.5; // the fog-free square: tiles within `radius` (Chebyshev) of the centre
    this.fog.geometry.dispose();
    this.fog.geometry = squareFrame(inner, inner + 0.3);
    this.fog.position.set(col + 0.5, 0.3, row + 0.5);
  }

  /** Every frame: the kings' markers follow their (interpolated) entities. */
  update(store, scale) {
    if (!this.group.visible) return;
    let n = 0;
    for (const id of this.kingIds) {
      const slot = store.index.get(id);
      if (slot === undefined) continue;
      if (n === this.kings.length) {
        const mesh = new THREE.Mesh(this.kingGeometry, this.kingMaterial);
        this.kings.push(mesh);
        this.group.add(mesh);
      }
      const mesh = this.kings[n++];
      mesh.visible = true;
      mesh.scale.setScalar(scale);
      mesh.position.set(store.x[slot], store.y[slot] + 1.3 * scale, store.z[slot]);
    }
    for (let k = n; k < this.kings.length; k++) this.kings[k].visible = false;
  }
}
