"""The simulation: the game's state in flat numpy tables (`state`), the rules every system shares
(`rules`, `enums`), the world's maps (`world`, `noise`), the systems that transform the state in
bulk (`systems`), one tick of them all (`realm`), the random draws (`draws`), lifetime metrics
(`metrics`), and what agents see and do (`obs`, `layout`, `actions`). Nothing here knows about
PettingZoo, processes or files other than the map cache."""
