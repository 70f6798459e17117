// Colour helpers: the heatmap colour map, team palette, NPC and attack-style colours.

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

function hslToRgb(h, s, l, out, o) {
  const a = s * Math.min(l, 1 - l);
  const f = (n) => {
    const k = (n + h * 12) % 12;
    return l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1));
  };
  out[o] = f(0);
  out[o + 1] = f(8);
  out[o + 2] = f(4);
}

export function srgbToLinear(c) {
  return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
}

/** sRGB components (0..1) of a team id. */
export function teamSRGB(team) {
  const c = [0.85, 0.85, 0.85];
  if (team >= 0) {
    const h = (0.02 + team * 0.6180339887) % 1;
    const l = team % 3 === 1 ? 0.62 : team % 3 === 2 ? 0.48 : 0.55;
    hslToRgb(h, 0.8, l, c, 0);
  }
  return c;
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

// Team colours: hues spread by the golden ratio so neighbouring team ids differ strongly.
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

// kind: 1 passive, 2 neutral, 3 hostile
export const NPC_COLORS = [
  [0.8, 0.8, 0.8],
  [0.45, 0.9, 0.55],
  [0.98, 0.82, 0.25],
  [0.95, 0.18, 0.22],
];
export const NPC_KIND_NAMES = ['player', 'passive NPC', 'neutral NPC', 'hostile NPC'];

// attack style: 0 melee, 1 range, 2 mage
export const STYLE_COLORS = [
  [1.0, 0.45, 0.15],
  [0.55, 1.0, 0.3],
  [0.6, 0.5, 1.0],
];
export const STYLE_NAMES = ['melee', 'range', 'mage'];

export function cssColor(rgb) {
  return `rgb(${Math.round(rgb[0] * 255)},${Math.round(rgb[1] * 255)},${Math.round(rgb[2] * 255)})`;
}
