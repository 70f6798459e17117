// The controls that send commands: the timeline (play, pause, step, speed, seek, tick label) and
// the overlay menu (overlay select and opacity). Plain DOM; commands go out through `send`.

const $ = (id) => document.getElementById(id);

/** The usual speed steps (ticks per second); the menu offers those inside the server's range. */
export const SPEED_STEPS = [0.5, 1, 2, 5, 10, 20, 30, 60];
/** The range assumed when a header has no usable `speed_range` (servers from before it). */
export const FALLBACK_SPEED_RANGE = [0.5, 60];

/** The header's `speed_range` as [low, high], or the fallback when it is missing or unusable. */
export function speedRange(header) {
  const r = header?.speed_range;
  if (Array.isArray(r) && r.length === 2) {
    const [low, high] = r.map(Number);
    if (Number.isFinite(low) && Number.isFinite(high) && low > 0 && low <= high) return [low, high];
  }
  return [...FALLBACK_SPEED_RANGE];
}

/** Menu values for [low, high]: the steps inside it plus both bounds, ascending, no duplicates. */
export function speedOptions([low, high]) {
  const values = [low, ...SPEED_STEPS.filter((s) => s > low && s < high), high];
  return values.filter((v, i) => i === 0 || v !== values[i - 1]);
}

function speedLabel(v) {
  return `${Number(v.toPrecision(3))} t/s`;
}

function option(value, text) {
  const opt = document.createElement('option');
  opt.value = String(value);
  opt.textContent = text;
  return opt;
}

export class Timeline {
  /** `send(cmd)` sends a command; `canSeek()` says whether seeking is allowed (replays only). */
  constructor(send, canSeek) {
    this.send = send;
    this.canSeek = canSeek;
    this.speedSelect = $('speed');
    this.seek = $('seek');
    this.label = $('tick-label');
    this.range = [...FALLBACK_SPEED_RANGE];
    this.seekDragging = false;

    // Buttons give focus back so Space/. keep acting as shortcuts (not as a second click).
    for (const name of ['play', 'pause', 'step']) {
      $(name).addEventListener('click', (ev) => {
        this.send({ cmd: name });
        ev.currentTarget.blur();
      });
    }
    this.speedSelect.addEventListener('change', (ev) => this.send({ cmd: 'speed', value: Number(ev.target.value) }));
    const seek = this.seek;
    seek.addEventListener('pointerdown', () => (this.seekDragging = true));
    // a press that ends without a change must not leave the slider frozen
    window.addEventListener('pointerup', () => setTimeout(() => (this.seekDragging = false), 0));
    seek.addEventListener('input', () => {
      this.seekDragging = true;
      this.label.textContent = `→ ${seek.value}`;
    });
    seek.addEventListener('change', () => {
      this.seekDragging = false;
      if (this.canSeek()) this.send({ cmd: 'seek', tick: Number(seek.value) });
    });
    this.setSpeedRange(this.range, 10);
  }

  /** Rebuild the speed menu for [low, high] and select `speed` (or the nearest option). */
  setSpeedRange(range, speed) {
    this.range = range;
    this.speedSelect.replaceChildren(...speedOptions(range).map((v) => option(v, speedLabel(v))));
    this.syncSpeed(speed);
  }

  /** Show `speed`; a speed inside the range that is no menu step gets an option of its own. */
  syncSpeed(speed) {
    const sel = this.speedSelect;
    const options = [...sel.options];
    const values = options.map((o) => Number(o.value));
    const exact = values.findIndex((v) => Math.abs(v - speed) < 1e-6);
    if (exact >= 0) {
      sel.selectedIndex = exact;
      return;
    }
    const [low, high] = this.range;
    if (speed >= low && speed <= high) {
      const opt = option(speed, speedLabel(speed));
      const after = options.find((o) => Number(o.value) > speed) ?? null;
      sel.insertBefore(opt, after);
      sel.value = opt.value;
      return;
    }
    let best = 0;
    for (let i = 1; i < values.length; i++) if (Math.abs(values[i] - speed) < Math.abs(values[best] - speed)) best = i;
    sel.selectedIndex = best;
  }

  /** The seek slider covers ticks 0..ticks (replays); live runs have no end. */
  setTicks(ticks, tick) {
    this.seek.max = String(Math.max(0, ticks ?? 0));
    if (tick !== undefined) this.seek.value = String(tick);
  }

  /** Show the current tick on the slider and label (left alone while the slider is dragged). */
  showTick(tick, ticks) {
    if (this.seekDragging) return;
    const t = tick ?? '–';
    this.seek.value = String(tick ?? 0);
    this.label.textContent = ticks ? `${t} / ${ticks}` : `tick ${t}`;
  }

  /** Enable the controls once a header arrived; highlight play or pause. */
  update(connected, playing) {
    $('play').disabled = !connected;
    $('pause').disabled = !connected;
    $('step').disabled = !connected;
    this.speedSelect.disabled = !connected;
    this.seek.disabled = !connected || !this.canSeek();
    $('play').classList.toggle('active', playing);
    $('pause').classList.toggle('active', !playing);
  }
}

export class OverlayMenu {
  /** `choose(name)` asks for an overlay (null: none); `setOpacity(0..1)` blends it. */
  constructor(choose, setOpacity) {
    this.select = $('overlay-select');
    this.select.addEventListener('change', (ev) => choose(ev.target.value || null));
    $('overlay-opacity').addEventListener('input', (ev) => setOpacity(Number(ev.target.value) / 100));
  }

  /** "none" plus the header's overlay names. */
  fill(names) {
    this.select.replaceChildren(option('', 'none'), ...names.map((name) => option(name, name)));
    this.select.value = '';
  }

  /** Show `name` as selected (null: none), adding it when the header did not list it. */
  sync(name) {
    if (name && ![...this.select.options].some((o) => o.value === name)) this.select.appendChild(option(name, name));
    this.select.value = name || '';
  }
}
