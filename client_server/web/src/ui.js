// Plain-DOM display widgets: messages, the overlay and terrain legends, inspector, replay picker,
// policy list. (Controls that send commands are in controls.js.)

import { NPC_COLORS, NPC_KIND_NAMES, PALETTE, STYLE_NAMES, colorKey, colormapCSS, cssColor, policyOf, teamSRGB, unit }
  from './colors.js';

const $ = (id) => document.getElementById(id);

export function formatNumber(v) {
  if (v === undefined || v === null || Number.isNaN(v)) return '–';
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1000) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  return v.toPrecision(3);
}

export class Messages {
  constructor() {
    this.el = $('messages');
    this.conn = null;
  }

  error(text) {
    const div = document.createElement('div');
    div.className = 'msg';
    div.textContent = text;
    this.el.appendChild(div);
    while (this.el.children.length > 6) this.el.removeChild(this.el.firstChild === this.conn ? this.el.children[1] : this.el.firstChild);
    setTimeout(() => div.remove(), 15000);
  }

  /** Persistent connection note; null removes it. */
  connection(text) {
    if (!text) {
      this.conn?.remove();
      this.conn = null;
      return;
    }
    if (!this.conn) {
      this.conn = document.createElement('div');
      this.conn.className = 'msg conn';
      this.el.prepend(this.conn);
    }
    this.conn.textContent = text;
  }
}

/** The legend's line on tiles without data ([] when the server sent none: an older server). */
function blankNote(blank) {
  if (typeof blank !== 'string' || !blank) return [];
  const note = document.createElement('div');
  note.className = 'legend-blank';
  note.id = 'legend-blank';
  note.textContent = blank;
  return [note];
}

export class Legend {
  // The legend's content exists only while an overlay is shown, so its text is empty otherwise.
  constructor() {
    this.el = $('legend');
    this.el.replaceChildren();
  }

  /** `blank`: what the overlay shows on tiles without data (the header's `overlay_blank`), or none. */
  show(name, min, max, blank) {
    const title = document.createElement('div');
    title.className = 'legend-name';
    title.id = 'legend-name';
    title.textContent = name;
    const bar = document.createElement('div');
    bar.className = 'legend-bar';
    bar.id = 'legend-bar';
    bar.style.background = colormapCSS();
    const labels = document.createElement('div');
    labels.className = 'legend-labels';
    const lo = document.createElement('span');
    lo.id = 'legend-min';
    lo.textContent = formatNumber(min);
    const hi = document.createElement('span');
    hi.id = 'legend-max';
    hi.textContent = formatNumber(max);
    labels.append(lo, ' ', hi);
    this.el.replaceChildren(title, bar, labels, ...blankNote(blank));
    this.el.hidden = false;
  }

  /** The overlay is selected but has no data at this tick. */
  empty(name, blank) {
    const title = document.createElement('div');
    title.className = 'legend-name';
    title.id = 'legend-name';
    title.textContent = `${name}: no data at this tick`;
    this.el.replaceChildren(title, ...blankNote(blank));
    this.el.hidden = false;
  }

  hide() {
    this.el.hidden = true;
    this.el.replaceChildren();
  }
}

// Fields shown in a fixed order; anything else the server sends is listed after them.
const ROWS = [
  ['kind', 'kind'],
  ['team', 'team'],
  ['policy', null],
  ['task', null],
  ['value', null],
  ['position', null],
  ['tile', null],
  ['health', null],
  ['food', 'food'],
  ['water', 'water'],
  ['level', 'level'],
  ['armour', 'armour'],
  ['melee', 'melee'],
  ['range', 'range'],
  ['mage', 'mage'],
  ['defense', 'defense'],
  ['last attack', null],
];
const HANDLED = new Set(['id', 'row', 'col', 'health', 'max_health', 'attack_style', 'attack_target',
  'task', 'task_progress', 'task_done', 'value', ...ROWS.map((r) => r[1]).filter(Boolean)]);

/** An agent's task as the inspector shows it: "eat_5 — 40 %", with " ✓" once done. `names` are the
 * header's task names (a frame's `task` indexes them), `progress` is per-mille; null: no task. */
export function taskText(names, task, progress, done) {
  if (!Array.isArray(names) || !Number.isInteger(task) || task < 0) return null;
  const name = names[task] === undefined ? `task ${task}` : String(names[task]);
  const percent = Number.isFinite(progress) ? Math.round(Math.min(1000, Math.max(0, progress)) / 10) : 0;
  return `${name} — ${percent} %${done > 0 ? ' ✓' : ''}`;
}

/** An agent's value estimate as the inspector shows it, from the frame's `value` field and the header's
 * `values` ({scale, none}: the field holds estimate x scale, `none` where there is none); null: none. */
export function valueText(values, stored) {
  if (!values || !Number.isFinite(values.scale) || values.scale <= 0) return null;
  if (!Number.isFinite(stored) || stored === values.none) return null;
  return formatNumber(stored / values.scale);
}

export class Inspector {
  constructor() {
    this.el = $('inspector');
    this.title = $('inspector-title');
    this.swatch = $('inspector-swatch');
    this.table = $('inspector-table');
    this.follow = $('follow');
    this.cells = new Map();
    this.id = null;
    this.policies = null; // the header's roster {names, teamPolicy} (null: unknown)
    this.tasks = null; // the header's task names (null: the run has no tasks)
    this.values = null; // the header's `values` ({scale, none}; null: no value estimates recorded)
  }

  cell(label) {
    let td = this.cells.get(label);
    if (!td) {
      const tr = document.createElement('tr');
      const th = document.createElement('td');
      th.textContent = label;
      td = document.createElement('td');
      tr.append(th, td);
      this.table.appendChild(tr);
      this.cells.set(label, td);
    }
    return td;
  }

  open(id) {
    if (this.id !== id) {
      this.table.replaceChildren();
      this.cells.clear();
    }
    this.id = id;
    this.el.hidden = false;
  }

  close() {
    this.id = null;
    this.el.hidden = true;
    this.follow.checked = false;
  }

  /** Refresh from the store; `terrain` names the tile material. */
  render(store, terrain) {
    if (this.id === null) return;
    const id = this.id;
    const slot = store.index.get(id);
    this.title.textContent = `id ${id}`;
    if (slot === undefined) {
      this.title.innerHTML = '';
      this.title.append(`id ${id} `);
      const gone = document.createElement('span');
      gone.className = 'gone';
      gone.textContent = '(gone)';
      this.title.append(gone);
      return;
    }
    const v = (name) => {
      const col = store.columns.get(name);
      return col ? col[slot] : undefined;
    };
    const kind = v('kind');
    const team = v('team');
    const rgb = kind === 0 ? teamSRGB(colorKey(team, this.policies)) : NPC_COLORS[kind] || NPC_COLORS[0];
    this.swatch.style.background = cssColor(rgb);
    for (const [label, field] of ROWS) {
      let text;
      if (label === 'kind') text = NPC_KIND_NAMES[kind] ?? formatNumber(kind);
      else if (label === 'team') text = team >= 0 ? formatNumber(team) : '–';
      else if (label === 'policy') {
        const policy = kind === 0 ? policyOf(team, this.policies) : null;
        if (policy === null) continue;
        text = policy;
      } else if (label === 'task') {
        const task = kind === 0 ? taskText(this.tasks, v('task'), v('task_progress'), v('task_done')) : null;
        if (task === null) continue;
        text = task;
      } else if (label === 'value') {
        const value = kind === 0 ? valueText(this.values, v('value')) : null;
        if (value === null) continue;
        text = value;
      }
      else if (label === 'position') text = `row ${formatNumber(v('row'))}, col ${formatNumber(v('col'))}`;
      else if (label === 'tile') text = terrain.materialName(v('row'), v('col'));
      else if (label === 'health') text = `${formatNumber(v('health'))} / ${formatNumber(v('max_health'))}`;
      else if (label === 'last attack') {
        const style = v('attack_style');
        text = style >= 0 ? `${STYLE_NAMES[style] ?? style} → ${formatNumber(v('attack_target'))}` : '–';
      } else {
        const value = v(field);
        if (value === undefined) continue;
        text = formatNumber(value);
      }
      this.cell(label).textContent = text;
    }
    for (const [name, col] of store.columns) {
      if (HANDLED.has(name)) continue;
      this.cell(name).textContent = formatNumber(col[slot]);
    }
  }
}

function humanBytes(n) {
  if (typeof n !== 'number') return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export class Picker {
  constructor(onPick) {
    this.el = $('picker');
    this.list = $('picker-list');
    $('picker-live').addEventListener('click', () => onPick(null));
    $('picker-close').addEventListener('click', () => this.hide());
    this.el.addEventListener('click', (ev) => {
      if (ev.target === this.el) this.hide();
    });
    this.onPick = onPick;
  }

  /** Offer the live run only when the server has one (GET /api/health says so). */
  setLive(available) {
    $('picker-live').hidden = !available;
  }

  show(replays) {
    this.list.replaceChildren();
    if (!replays.length) {
      const li = document.createElement('li');
      li.className = 'small';
      li.textContent = 'no replays found';
      this.list.appendChild(li);
    }
    for (const r of replays) {
      const li = document.createElement('li');
      const b = document.createElement('button');
      b.className = 'replay-item';
      b.dataset.name = r.name;
      b.textContent = r.name;
      const meta = document.createElement('span');
      meta.className = 'meta';
      const parts = [];
      if (r.ticks !== undefined && r.ticks !== null) parts.push(`${r.ticks} ticks`);
      if (typeof r.size === 'number') parts.push(`${r.size}² map`);
      if (r.config) parts.push(String(r.config));
      if (typeof r.bytes === 'number') parts.push(humanBytes(r.bytes));
      if (r.unreadable) parts.push(`unreadable: ${r.unreadable}`);
      meta.textContent = parts.join(' · ');
      b.appendChild(meta);
      if (r.unreadable) b.disabled = true;  // listed, so nobody wonders where it went, but not openable
      else b.addEventListener('click', () => this.onPick(r.name));
      li.appendChild(b);
      this.list.appendChild(li);
    }
    this.el.hidden = false;
  }

  hide() {
    this.el.hidden = true;
  }
}

/** The list of policies and their colours (shown when a replay names several): each a capsule, the
 * players' shape, in the policy's colour. */
export class PolicyList {
  constructor() {
    this.el = $('policies');
  }

  show(policies) {
    this.el.replaceChildren();
    if (!policies || policies.length < 2) {
      this.el.hidden = true;
      return;
    }
    policies.forEach((name, i) => {
      const row = document.createElement('div');
      row.className = 'legend-item';
      row.dataset.meaning = `policy ${i}`;
      row.append(icon('capsule', teamSRGB(i)), ` ${name}`);
      this.el.appendChild(row);
    });
    this.el.hidden = false;
  }
}

const SVG = 'http://www.w3.org/2000/svg';

/** A 14 px legend icon: `shape` is 'capsule' (players), 'diamond' (NPCs: an octahedron seen from
 * the side), 'beam' (attacks) or 'frame' (marks on the ground), filled with `rgb` (sRGB, 0..1). */
export function icon(shape, rgb) {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 14 14');
  svg.setAttribute('class', `icon icon-${shape}`);
  const color = cssColor(rgb);
  svg.dataset.color = color;
  const part = (tag, attributes) => {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attributes)) el.setAttribute(k, v);
    svg.appendChild(el);
  };
  if (shape === 'capsule') part('rect', { x: 4, y: 1, width: 6, height: 12, rx: 3, fill: color });
  else if (shape === 'diamond') part('polygon', { points: '7,0 12,7 7,14 2,7', fill: color });
  else if (shape === 'beam') part('rect', { x: 0, y: 5.5, width: 14, height: 3, rx: 1.5, fill: color });
  else part('rect', { x: 2, y: 2, width: 10, height: 10, fill: 'none', stroke: color, 'stroke-width': 3 });
  return svg;
}

/** The players' legend icon: a capsule in horizontal bands of `colors` (sRGB, 0..1). */
function bandedCapsule(colors) {
  const svg = icon('capsule', colors[0]);
  const body = svg.firstChild;
  const id = `capsule-${Math.random().toString(36).slice(2)}`;
  const clip = document.createElementNS(SVG, 'clipPath');
  clip.setAttribute('id', id);
  clip.appendChild(body.cloneNode());
  svg.replaceChildren(clip);
  colors.forEach((rgb, i) => {
    const band = document.createElementNS(SVG, 'rect');
    const height = 12 / colors.length;
    for (const [k, v] of Object.entries({ x: 4, y: 1 + i * height, width: 6, height, fill: cssColor(rgb) })) {
      band.setAttribute(k, v);
    }
    band.setAttribute('clip-path', `url(#${id})`);
    svg.appendChild(band);
  });
  delete svg.dataset.color;
  return svg;
}

/** The legend of what is drawn over the terrain, a line a shape: players (capsules; their colours:
 * the policy list under it, or one a team), NPCs (octahedra) by kind, attacks (beams) by style, and
 * in a minigame its marks. Every colour comes from the one palette (colors.js PALETTE). */
export class EntityLegend {
  constructor() {
    this.el = $('entity-legend');
  }

  show(header, roster) {
    const byPolicy = roster && roster.names.length > 1;
    const rows = [
      ['players', [['player', 'capsule', null, byPolicy ? 'colour: its policy (below)' : 'colour: its team']]],
      ['NPCs', ['passive', 'neutral', 'hostile'].map((k) => [`npc ${k}`, 'diamond', PALETTE.npc[k], k])],
      ['attacks', ['melee', 'range', 'mage'].map((k) => [`attack ${k}`, 'beam', PALETTE.style[k], k])],
    ];
    if (header?.game) {
      rows.push(['marks', [['mark centre', 'frame', PALETTE.mark.centre, 'centre / king'],
        ['mark fog', 'frame', PALETTE.mark.fog, 'fog edge']]]);
    }
    this.el.replaceChildren(...rows.map(([title, items]) => {
      const row = document.createElement('div');
      row.className = 'legend-row';
      const head = document.createElement('span');
      head.className = 'legend-title';
      head.textContent = title;
      row.append(head);
      for (const [meaning, shape, rgb, name] of items) {
        const item = document.createElement('span');
        item.className = 'legend-item';
        item.dataset.meaning = meaning;
        // the players' capsule in bands of the first player colours: its colour varies (listed apart)
        item.append(rgb ? icon(shape, unit(rgb)) : bandedCapsule([0, 1, 2].map(teamSRGB)), name);
        if (!rgb) item.dataset.shapeOnly = '1';
        row.append(item);
      }
      return row;
    }));
    this.el.hidden = false;
  }

  hide() {
    this.el.hidden = true;
    this.el.replaceChildren();
  }
}

/** Which colour is which material: the header's `materials` {index: name} and `colors` {index: [r, g, b]}. */
export class TerrainLegend {
  constructor() {
    this.el = $('terrain-legend');
    this.list = $('terrain-items');
  }

  show(header) {
    const names = header?.materials || {};
    const colors = header?.colors || {};
    const indices = [...new Set([...Object.keys(names), ...Object.keys(colors)])]
      .map(Number)
      .filter(Number.isInteger)
      .sort((a, b) => a - b);
    this.list.replaceChildren();
    for (const m of indices) {
      const name = String(names[m] ?? `material ${m}`);
      const rgb = Array.isArray(colors[m]) ? colors[m] : [128, 128, 128]; // the terrain's default grey
      const item = document.createElement('span');
      item.className = 'terrain-item';
      item.dataset.material = name;
      item.title = `${name} (material ${m})`;
      const swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = `rgb(${rgb.slice(0, 3).map((v) => Number(v) | 0).join(',')})`;
      item.append(swatch, name);
      this.list.appendChild(item);
    }
    this.el.hidden = indices.length === 0;
  }

  hide() {
    this.el.hidden = true;
    this.list.replaceChildren();
  }
}
