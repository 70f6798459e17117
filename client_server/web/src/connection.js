// One websocket to the server, reconnecting with a capped back-off when it closes.

export function wsURL(path) {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${proto}//${location.host}${path}`;
}

/** Decode base64 into a Uint8Array (no intermediate arrays). */
export function decodeBase64(text) {
  const bin = atob(text);
  const n = bin.length;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export class Connection {
  /**
   * handlers: onPacket(msg), onOpen(), onClose(retryInSeconds), onBadFrame(text)
   */
  constructor(url, handlers) {
    this.url = url;
    this.handlers = handlers;
    this.ws = null;
    this.attempt = 0;
    this.timer = null;
    this.stopped = false;
  }

  get open() {
    return !!this.ws && this.ws.readyState === WebSocket.OPEN;
  }

  connect() {
    this.stopped = false;
    clearTimeout(this.timer);
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch (err) {
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
      this.handlers.onOpen?.();
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') return;
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        this.handlers.onBadFrame?.(ev.data.slice(0, 80));
        return;
      }
      this.handlers.onPacket(msg);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (!this.stopped) this.scheduleReconnect();
    };
    ws.onerror = () => {
      // onclose follows; nothing else to do here
    };
  }

  scheduleReconnect() {
    const delay = Math.min(10, 1 + this.attempt * 2);
    this.attempt++;
    this.handlers.onClose?.(delay);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay * 1000);
  }

  send(obj) {
    if (!this.open) return false;
    this.ws.send(JSON.stringify(obj));
    return true;
  }

  close() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.ws) this.ws.close();
    this.ws = null;
  }
}
