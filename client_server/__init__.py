"""Replays served to the 3D browser viewer: the websocket server (`client_server.server`), its
Origin/Host guard, replay decoding with size caps, live sessions, screenshots, and the ``nmmo serve``
command (`client_server.cli`). The viewer's web build lives in client_server/web."""
