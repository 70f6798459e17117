// Colours: the heatmap colour map, and the one palette of everything else (PALETTE): players'
// policy or team colours, NPC kinds, attack styles and marks.

// Control points of a perceptually ordered dark-purple -> blue -> green -> yellow ramp
// (viridis-like), linearly interpolated to 256 entries.
const RAMP = [
  [0.0, 0x44, 0x01, 0x54],
  [0.125, 0x48, 0x28, 0x78],
  [0.25, 0x3e, 0x49, 0x89],
  [0.375, 0x31, 0x68, 0x8e],
  [0.5, 0x26, 0x82, 0x8e],
  [0.625, 0x1f, 0x9e, 0x89],
  [0.75, 0x35, 0xb7, 0x79],
  [0.875, 0x6e, 0xce, 0x58],
  [1.0, 0xfd, 0xe7, 0x25],
];

/** 256 RGBA entries (Uint8Array of 1024) of the heatmap colour map. */
export function colormapRGBA() {
  const out = new Uint8Array(256 * 4);
  for (let i = 0; i < 256; i++) {
    const t = i / 255;
    let k = 0;
    while (k < RAMP.length - 2 && t > RAMP[k + 1][0]) k++;
    const a = RAMP[k];
    const b = RAMP[k + 1];
    const f = (t - a[0]) / (b[0] - a[0]);
    out[i * 4] = Math.round(a[1] + (b[1] - a[1]) * f);
    out[i * 4 + 1] = Math.round(a[2] + (b[2] - a[2]) * f);
    out[i * 4 + 2] = Math.round(a[3] + (b[3] - a[3]) * f);
    out[i * 4 + 3] = 255;
  }
  return out;
}

/** CSS linear-gradient for the legend, left = min, right = max. */
export function colormapCSS() {
  const stops = RAMP.map(([t, r, g, b]) => `rgb(${r},${g},${b}) ${Math.round(t * 100)}%`);
  return `linear-gradient(to right, ${stops.join(', ')})`;
}

export function srgbToLinear(c) {
  return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
}

// The viewer's one palette: every colour a thing is drawn in, by what it means, and no colour with
// two meanings. Each pair of these, and each against the terrain's colours (the header's `colors`:
// nmmo.core.enums.MATERIAL_COLORS, lava red among them), differs by a CIE76 colour difference of 25
// or more (tests/viewer/test_browser.py checks what the legend shows). Shapes say what a thing is
// (players are capsules, NPCs octahedra, attacks beams); colours say which: a player's policy (its
// team when one policy plays), an NPC's kind, an attack's style. Gauges are read along their length
// instead: the health bars (red empty to green full) and the overlay colour map (RAMP above).
export const PALETTE = Object.freeze({
  // players: one colour per policy (or per team when one policy plays all), in this order; a tenth
  // policy (or team) takes the first colour again, so the inspector names it
  policy: [
    [0, 191, 255], // sky blue
    [124, 252, 0], // lawn green
    [255, 20, 147], // deep pink
    [75, 0, 130], // indigo
    [249, 147, 121], // salmon
    [0, 255, 176], // aquamarine
    [139, 69, 19], // brown
    [179, 68, 108], // rose
    [255, 255, 0], // yellow
  ],
  npc: { passive: [170, 205, 235], neutral: [255, 150, 200], hostile: [255, 26, 240] },
  style: { melee: [255, 120, 0], range: [0, 225, 200], mage: [140, 90, 255] },
  // marks: the minigames' centre tile and kings (gold), their fog's edge, the selection ring, and the
  // empty part of a health bar
  mark: { centre: [255, 213, 74], fog: [60, 40, 90], selection: [255, 255, 255], empty: [25, 25, 25] },
});

/** sRGB components (0..1) of a palette entry ([r, g, b] in 0..255). */
export function unit(rgb) {
  return rgb.map((v) => v / 255);
}

/** sRGB components (0..1) of a player's colour key (its policy index, or its team: `colorKey`). */
export function teamSRGB(key) {
  const colors = PALETTE.policy;
  const k = Number.isInteger(key) && key >= 0 ? key % colors.length : 0;
  return unit(colors[k]);
}

/**
 * The policy index of a team: `roster` is {names, teamPolicy} from the header (tournament replays
 * list the policy index of every team, dealt at random; older ones dealt team t to t % count).
 */
export function policyIndex(team, roster) {
  if (!roster || !roster.names.length || team < 0) return -1;
  const dealt = roster.teamPolicy;
  return dealt && team < dealt.length ? dealt[team] : team % roster.names.length;
}

/** What a player's colour stands for: its policy when the header names several, else its team. */
export function colorKey(team, roster) {
  return roster && roster.names.length > 1 && team >= 0 ? policyIndex(team, roster) : team;
}

/** The policy name of a team, or null when the header names none. */
export function policyOf(team, roster) {
  const index = policyIndex(team, roster);
  return index >= 0 ? roster.names[index] ?? null : null;
}

const TEAM_CACHE = new Map();
/** Linear-RGB components of a team id (what three.js instance colours expect), into out[o..o+2]. */
export function teamColor(team, out, o) {
  let c = TEAM_CACHE.get(team);
  if (!c) {
    c = Float32Array.from(teamSRGB(team), srgbToLinear);
    TEAM_CACHE.set(team, c);
  }
  out[o] = c[0];
  out[o + 1] = c[1];
  out[o + 2] = c[2];
}

/** Linear copy of an sRGB triple. */
export function linear(rgb) {
  return Float32Array.from(rgb, srgbToLinear);
}

// kind: 1 passive, 2 neutral, 3 hostile (an unknown kind is drawn as passive)
export const NPC_COLORS = [PALETTE.npc.passive, PALETTE.npc.passive, PALETTE.npc.neutral, PALETTE.npc.hostile].map(unit);
export const NPC_KIND_NAMES = ['player', 'passive NPC', 'neutral NPC', 'hostile NPC'];

// attack style: 0 melee, 1 range, 2 mage
export const STYLE_COLORS = [PALETTE.style.melee, PALETTE.style.range, PALETTE.style.mage].map(unit);
export const STYLE_NAMES = ['melee', 'range', 'mage'];

/** Marks' colours as 0xRRGGBB numbers (three.js materials take them). */
export function hex(rgb) {
  return (rgb[0] << 16) | (rgb[1] << 8) | rgb[2];
}

export function cssColor(rgb) {
  return `rgb(${Math.round(rgb[0] * 255)},${Math.round(rgb[1] * 255)},${Math.round(rgb[2] * 255)})`;
}
