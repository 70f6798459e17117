"""Replays, the websocket server and the 3D browser viewer. Arrives with the viewer issue; nothing
is exported yet."""
