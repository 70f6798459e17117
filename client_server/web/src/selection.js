// Picking and following: a click (not a drag) on the canvas selects the entity under the pointer,
// the inspector shows it, and "follow" keeps the orbit target on it.

const $ = (id) => document.getElementById(id);
const CLICK_SLOP = 6; // px the pointer may move between press and release and still be a click
const PICK_RADIUS = 14; // px: a click this close to an entity's body selects it

export class Selection {
  /**
   * `view` (SceneView) draws and picks, `session` holds the store and sends commands, `inspector`
   * shows the selected entity, `messages` tells when a followed entity is gone.
   */
  constructor(view, session, inspector, messages) {
    this.view = view;
    this.session = session;
    this.inspector = inspector;
    this.messages = messages;
    this.selectedId = null;
    this.following = false;
    this.followBox = $('follow');

    $('inspector-close').addEventListener('click', () => this.select(null));
    this.followBox.addEventListener('change', (ev) => this.setFollow(ev.target.checked));
    let down = null;
    const canvas = view.canvas;
    canvas.addEventListener('pointerdown', (ev) => {
      down = { x: ev.clientX, y: ev.clientY, button: ev.button };
    });
    canvas.addEventListener('pointerup', (ev) => {
      if (!down || down.button !== 0) return;
      const moved = Math.hypot(ev.clientX - down.x, ev.clientY - down.y);
      down = null;
      if (moved < CLICK_SLOP) this.pickAt(ev.clientX, ev.clientY);
    });
  }

  get store() {
    return this.session.store;
  }

  screenPosition(id) {
    return this.view.screenPosition(this.store, id);
  }

  pickAt(clientX, clientY) {
    let id = this.view.pickEntity(clientX, clientY);
    if (id === null) id = this.nearestOnScreen(clientX, clientY, PICK_RADIUS);
    this.select(id);
  }

  nearestOnScreen(clientX, clientY, radius) {
    const store = this.store;
    let best = null;
    let bestD = radius;
    for (let s = 0; s < store.count; s++) {
      const p = this.screenPosition(store.ids[s]);
      if (!p) continue;
      const d = Math.hypot(p.x - clientX, p.y - clientY);
      if (d < bestD) {
        bestD = d;
        best = store.ids[s];
      }
    }
    return best;
  }

  select(id) {
    if (id === this.selectedId) return;
    if (this.following) this.setFollow(false);
    this.selectedId = id;
    if (id === null) {
      this.inspector.close();
      return;
    }
    this.inspector.open(id);
    this.inspector.render(this.store, this.view.terrain);
  }

  setFollow(on) {
    on = on && this.selectedId !== null;
    this.following = on;
    this.followBox.checked = on;
    if (on) {
      // close in on the followed entity if the camera is far away
      const store = this.store;
      const slot = store.index.get(this.selectedId);
      const t = this.view.controls.target;
      if (slot !== undefined) this.view.lookAt(store.x[slot], store.y[slot], store.z[slot], 30);
      else this.view.lookAt(t.x, t.y, t.z, 30);
    }
    this.session.send({ cmd: 'follow', id: on ? this.selectedId : null });
  }

  toggleFollow() {
    if (this.selectedId !== null) this.setFollow(!this.following);
  }

  /** After a tick: refresh the inspector; stop following an entity that is gone. */
  refresh() {
    if (this.selectedId === null) return;
    this.inspector.render(this.store, this.view.terrain);
    if (this.following && !this.store.has(this.selectedId)) {
      this.setFollow(false);
      this.messages.error(`entity ${this.selectedId} is gone; stopped following`);
    }
  }

  /** Every frame (after interpolation): keep the followed entity at the orbit target. */
  update() {
    if (!this.following || this.selectedId === null) return;
    const store = this.store;
    const slot = store.index.get(this.selectedId);
    if (slot !== undefined) this.view.track(store.x[slot], store.y[slot], store.z[slot]);
  }
}
