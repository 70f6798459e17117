"""Assigned tasks compiled into flat arrays: instances, predicate batches and combination levels.

An *instance* is one running task: an agent's (reward_to = "agent") or a team's (reward_to =
"team": one per team and spec, whoever of the team holds the spec). Each instance's tree of nodes
gets node ids; leaves whose predicate is a `Term` form one batch (`nmmo.tasks.terms`), the leaves
of each other predicate, across every instance, one `Leaves` batch; the combinations are grouped
by height and operator so that each group is one numpy reduction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nmmo.tasks import registry
from nmmo.tasks import spec as spec_module
from nmmo.tasks.core import ONE, ZERO, Context, Layout, Leaves, Members, clip_ufunc
from nmmo.tasks.spec import Node, TaskSet
from nmmo.tasks.terms import Terms


@dataclass
class Combination:
    """Every combination node of one operator at one height: `parents` (node ids), their
    children's node ids flat in parent order (`children`, segment `starts`, `owner` = parent
    position), and the sum weights or at_least k."""

    op: str
    parents: np.ndarray
    children: np.ndarray
    starts: np.ndarray
    owner: np.ndarray
    weights: np.ndarray
    k: np.ndarray
    block: slice | None = None  # the parents' node ids, a range once compiled
    height: int = 0
    span: slice | None = None  # its children within its level's gather (`Level`)
    parent_inst: np.ndarray | None = None  # each parent's instance
    skip: bool = False  # every parent belongs to a completed task-type task: its block stays as it is

    def __post_init__(self) -> None:
        self.unweighted = bool((self.weights == 1.0).all())  # x * 1.0 is x: the product can go
        if self.op == "at_least":
            self._bind_best()

    def _bind_best(self) -> None:
        """Children on a (parents, widest) grid, padded with -1 (below any progress), so that one
        sort per row puts each parent's k best last: `best` are their grid positions, best first.
        When every parent has as many children and the same k, the k last columns are the best."""
        n = len(self.parents)
        counts = np.bincount(self.owner, minlength=n)
        self.width = width = int(counts.max(initial=1))
        self.uniform = bool((counts == width).all())
        self.grid_position = self.owner * width + np.arange(self.children.size) - self.starts[self.owner]
        taken = np.minimum(self.k, counts).astype(np.int64)
        self.best = np.concatenate([p * width + width - 1 - np.arange(t) for p, t in enumerate(taken.tolist())]
                                   + [np.zeros(0, np.int64)])
        self.best_owner = np.repeat(np.arange(n), taken)
        self.same_k = int(taken[0]) if n and self.uniform and (taken == taken[0]).all() and taken[0] > 0 else 0
        stop = width - 1 - self.same_k
        self.best_columns = slice(None, stop if stop >= 0 else None, -1)  # the k last, best first (as `best`)

    def apply(self, values: np.ndarray, progress: np.ndarray) -> None:
        """Write the parents' progress into their block of `progress`, from `values` (their
        level's gathered children, read at `span`; sorted in place by at_least)."""
        values, out = values[self.span], progress[self.block]
        if self.op == "and":
            np.minimum.reduceat(values, self.starts, out=out)
        elif self.op == "or":
            np.maximum.reduceat(values, self.starts, out=out)
        elif self.op == "not":
            np.subtract(ONE, values, out=out)
        elif self.op == "sum":
            np.add.reduceat(values if self.unweighted else values * self.weights, self.starts, out=out)
            clip_ufunc(out, ZERO, ONE, out=out)
        else:  # at_least: the mean of the k best children, added best first
            grid = self._sorted(values)
            if self.same_k:
                np.add.reduce(grid[:, self.best_columns], axis=1, out=out)
            else:
                out[:] = np.bincount(self.best_owner, weights=grid.ravel()[self.best], minlength=len(self.parents))
            out /= self.k

    def _sorted(self, values: np.ndarray) -> np.ndarray:
        """Each parent's children in ascending order, a row each on the grid (sorted in place:
        `values` is a fresh gather)."""
        if self.uniform:
            grid = values.reshape(-1, self.width)
        else:
            grid = np.full(len(self.parents) * self.width, -1.0)
            grid[self.grid_position] = values
            grid = grid.reshape(-1, self.width)
        grid.sort(axis=1)
        return grid


@dataclass
class Level:
    """The combinations of one height: one gather reads all their children (every child is of a
    lower height, so already computed), then each writes its parents' block in place."""

    combinations: list[Combination]

    def __post_init__(self) -> None:
        start = 0
        for combination in self.combinations:
            size = combination.children.size
            combination.span, start = slice(start, start + size), start + size
        self.children = np.concatenate([c.children for c in self.combinations])

    def apply(self, progress: np.ndarray) -> None:
        if self.skip:
            return
        values = progress[self.children]
        for combination in self.combinations:
            if not combination.skip:
                combination.apply(values, progress)

    def skip_done(self, frozen: np.ndarray) -> None:
        """Skip the combinations whose every parent's task is completed (and not ongoing)."""
        for combination in self.combinations:
            combination.skip = bool(frozen[combination.parent_inst].all())
        self.skip = all(combination.skip for combination in self.combinations)


def combination_levels(combinations: list[Combination]) -> list[Level]:
    """Consecutive combinations of the same height (they come sorted by height) as levels."""
    heights = sorted({c.height for c in combinations})
    return [Level([c for c in combinations if c.height == h]) for h in heights]


@dataclass
class Compiled:
    """The arrays `TaskState.evaluate` runs on."""

    spec: np.ndarray  # per instance: its spec index
    inst_slot: np.ndarray  # per instance: its agent's slot (-1: a team's instance)
    root: np.ndarray  # per instance: its root node
    is_hold: np.ndarray  # per instance: its spec's type and reward
    not_ongoing: np.ndarray
    inv_hold: np.ndarray
    multiplier: np.ndarray
    on_completion: np.ndarray
    recipient_inst: np.ndarray  # (instance, slot) pairs: who a task rewards
    recipient_slot: np.ndarray
    held: np.ndarray  # per slot: the instance of the task it holds
    batches: list[Leaves]
    leaf_inst: list[np.ndarray]  # per batch: each leaf's instance
    terms: Terms | None  # the leaves of predicates that are terms, all in one batch
    term_inst: np.ndarray  # each term leaf's instance
    combinations: list[Combination]  # by height, then operator
    n_nodes: int
    names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.any_hold = bool(self.is_hold.any())
        self.not_hold, self.not_ongoing_weight = ~self.is_hold, self.not_ongoing.astype(np.float64)
        self.any_ongoing = not self.not_ongoing.all()
        self.any_completion = bool(self.on_completion.any())
        self.unit_reward = bool((self.multiplier == 1.0).all())  # x * 1.0 is x: the product can go
        self.one_recipient = bool(np.array_equal(self.recipient_inst, np.arange(len(self.spec))))
        self.levels = combination_levels(self.combinations)
        self.held_in_order = bool(np.array_equal(self.held, np.arange(len(self.spec))))  # slot s holds instance s
        # ... and is the one its task rewards: the slots' rewards are the instances' own
        self.paid_in_order = self.held_in_order and self.one_recipient and bool(
            np.array_equal(self.recipient_slot, np.arange(len(self.spec))))
        # the leaves' instances of the batches without state of their own (`Leaves.kept`), and their batch
        stateless = [(i, owners) for i, (batch, owners) in enumerate(zip(self.batches, self.leaf_inst, strict=True))
                     if not batch.kept and owners.size]
        self.stateless_mask = np.zeros(len(self.batches), dtype=bool)
        self.stateless_mask[[i for i, _ in stateless]] = True
        self.stateless_owner = np.concatenate([owners for _, owners in stateless] + [np.zeros(0, np.int64)])
        self.stateless_batch = np.concatenate([np.full(owners.size, i) for i, owners in stateless]
                                              + [np.zeros(0, np.int64)]).astype(np.int64)


def compile_tasks(tasks: TaskSet, layout: Layout, task_of_slot: np.ndarray, ctx: Context) -> Compiled:
    """Instances for the spec each slot holds, and their predicate trees as batches."""
    instances: dict[tuple, int] = {}
    rows: list[tuple[int, int, int | None, int]] = []  # (world, team, slot or None, spec)
    held = np.empty(len(task_of_slot), dtype=np.int64)
    for slot, spec_index in enumerate(task_of_slot.tolist()):
        world, local = divmod(slot, layout.slots)
        team = local // layout.team_size
        agent = tasks[spec_index].reward_to == "agent"
        key = (slot, spec_index) if agent else (world, team, spec_index, "team")
        if key not in instances:
            instances[key] = len(rows)
            rows.append((world, team, slot if agent else None, spec_index))
        held[slot] = instances[key]

    leaves: dict[str, list] = {}
    combos: dict[tuple[int, str], list] = {}
    roots, counter = [], [0]
    rewrites: dict[Node, Node | None] = {}

    def visit(node: Node, inst: int, default_subject: str, negate: bool = False) -> tuple[int, int]:
        """Node id and height of `node` in instance `inst` (`negate`: a ``not`` above a leaf,
        folded into the leaf: 1 - p there saves a combination step)."""
        if node.op == "predicate":
            if node not in rewrites:
                table = registry.lookup(node.predicate)().rewrite(dict(node.args), ctx.config)
                rewrites[node] = None if table is None else _parse(table, node.predicate)
            if rewrites[node] is not None:
                return visit(rewrites[node], inst, node.subject or default_subject, negate)
        elif node.op == "not" and (node.children[0].op in ("predicate", "not")):
            return visit(node.children[0], inst, default_subject, not negate)
        if negate and node.op != "predicate":
            node = Node("not", children=(node,))
        node_id = counter[0]
        counter[0] += 1
        if node.op == "predicate":
            leaves.setdefault(node.predicate, []).append((node_id, inst, node, node.subject or default_subject, negate))
            return node_id, 0
        children = [visit(child, inst, default_subject) for child in node.children]
        height = 1 + max(h for _, h in children)
        combos.setdefault((height, node.op), []).append((node_id, [c for c, _ in children], node, inst))
        return node_id, height

    for inst, (_, _, _, spec_index) in enumerate(rows):
        spec = tasks[spec_index]
        roots.append(visit(spec.node, inst, spec.subject)[0])

    batches, leaf_inst = [], []
    term_nodes, term_list, term_members, term_inst, term_negated = [], [], [], [], []
    for name, entries in leaves.items():
        cls = registry.lookup(name)
        predicate = cls()
        params = {p.name: p for p in cls.params}
        coded = [{key: params[key].code(value) for key, value in node.args} for _, _, node, _, _ in entries]
        terms = [predicate.term(args, ctx.config) for args in coded]
        if all(term is not None for term in terms):
            for (node_id, inst, node, keyword, negate), term in zip(entries, terms, strict=True):
                word = keyword if term.members == "subject" else dict(node.args)[term.members]
                term_nodes.append(node_id)
                term_negated.append(negate)
                term_list.append(term)
                term_members.append(_members(layout, rows[inst], word))
                term_inst.append(inst)
            continue
        args = {p.name: np.array([a[p.name] for a in coded]) for p in cls.params if p.kind != "group"}
        groups = {p.name: Members([_members(layout, rows[inst], dict(node.args)[p.name])
                                   for _, inst, node, _, _ in entries]) for p in cls.params if p.kind == "group"}
        subject = Members([_members(layout, rows[inst], keyword) for _, inst, _, keyword, _ in entries])
        batch = Leaves(predicate, np.array([e[0] for e in entries], dtype=np.int64), args, subject, groups,
                       np.array([rows[e[1]][0] for e in entries], dtype=np.int64))
        predicate.bind(batch, ctx)
        batch.static["negated"] = np.flatnonzero([e[4] for e in entries])
        batches.append(batch)
        leaf_inst.append(np.array([e[1] for e in entries], dtype=np.int64))
    terms = Terms(term_nodes, term_list, term_members, ctx, term_negated) if term_list else None

    combinations = [_combination(op, entries, height) for (height, op), entries in sorted(combos.items())]
    relabel = _blocks(terms, batches, combinations, counter[0])
    roots = relabel[np.array(roots, dtype=np.int64)]
    recipients = [(inst, slot) for inst, (world, team, slot, _) in enumerate(rows)
                  for slot in ([slot] if slot is not None else layout.team_slots(world, team).tolist())]
    specs = [tasks[r[3]] for r in rows]
    return Compiled(
        spec=np.array([r[3] for r in rows], dtype=np.int64),
        inst_slot=np.array([-1 if r[2] is None else r[2] for r in rows], dtype=np.int64),
        root=roots,
        is_hold=np.array([s.kind == "hold" for s in specs], dtype=bool),
        not_ongoing=np.array([s.kind != "ongoing" for s in specs], dtype=bool),
        inv_hold=np.array([1.0 / max(s.hold, 1) for s in specs]),
        multiplier=np.array([s.reward for s in specs], dtype=np.float64),
        on_completion=np.array([s.reward_on == "completion" for s in specs], dtype=bool),
        recipient_inst=np.array([i for i, _ in recipients], dtype=np.int64),
        recipient_slot=np.array([s for _, s in recipients], dtype=np.int64),
        held=held, batches=batches, leaf_inst=leaf_inst, terms=terms, term_inst=np.array(term_inst, dtype=np.int64),
        combinations=combinations, n_nodes=counter[0],
        names=[s.name for s in specs],
    )


def _blocks(terms: Terms | None, batches: list[Leaves], combinations: list[Combination], n: int) -> np.ndarray:
    """Renumber the nodes so that the term leaves, each batch's leaves and each combination's
    parents are blocks (their `block` slice): each is written into the progress array as one
    slice. Returns the new id of every old id."""
    groups = ([terms] if terms is not None else []) + batches + combinations
    ids = [g.parents if isinstance(g, Combination) else g.nodes for g in groups]
    relabel = np.empty(n, dtype=np.int64)
    relabel[np.concatenate(ids + [np.zeros(0, np.int64)])] = np.arange(n)
    start = 0
    for group, old in zip(groups, ids, strict=True):
        group.block, start = slice(start, start + len(old)), start + len(old)
        if isinstance(group, Combination):
            group.parents, group.children = relabel[group.parents], relabel[group.children]
        else:
            group.nodes = relabel[group.nodes]
    return relabel


def _parse(table: dict, name: str) -> Node:
    """A rewritten leaf's node (a bug in the predicate if it does not parse)."""

    def fail(where: str, message: str) -> ValueError:
        return ValueError(f"{name}.rewrite gave a bad node: field {where!r}: {message}")

    return spec_module.parse_node(table, fail)


def _members(layout: Layout, row: tuple, keyword: str) -> np.ndarray:
    world, team, slot, _ = row
    return layout.members(keyword, world, team, slot)


def _combination(op: str, entries: list, height: int) -> Combination:
    counts = np.array([len(children) for _, children, _, _ in entries], dtype=np.int64)
    weights = np.concatenate([np.array(node.weights if op == "sum" else [1.0] * len(children))
                              for _, children, node, _ in entries])
    return Combination(
        op=op,
        parents=np.array([node_id for node_id, _, _, _ in entries], dtype=np.int64),
        children=np.concatenate([np.array(children, dtype=np.int64) for _, children, _, _ in entries]),
        starts=np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64),
        owner=np.repeat(np.arange(len(entries)), counts),
        weights=weights,
        k=np.array([max(node.n, 1) for _, _, node, _ in entries], dtype=np.float64),
        height=height,
        parent_inst=np.array([inst for _, _, _, inst in entries], dtype=np.int64),
    )
