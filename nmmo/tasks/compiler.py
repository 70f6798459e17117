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
from nmmo.tasks.core import Context, Layout, Leaves, Members, clip01
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

    def __post_init__(self) -> None:
        self.unweighted = bool((self.weights == 1.0).all())  # x * 1.0 is x: the product can go
        if self.op == "at_least":
            self._bind_best()

    def _bind_best(self) -> None:
        """Children on a (parents, widest) grid, padded with -1 (below any progress), so that one
        sort per row puts each parent's k best last: `best` are their grid positions, best first."""
        n = len(self.parents)
        counts = np.bincount(self.owner, minlength=n)
        self.width = width = int(counts.max(initial=1))
        self.uniform = bool((counts == width).all())
        self.grid_position = self.owner * width + np.arange(self.children.size) - self.starts[self.owner]
        taken = np.minimum(self.k, counts).astype(np.int64)
        self.best = np.concatenate([p * width + width - 1 - np.arange(t) for p, t in enumerate(taken.tolist())]
                                   + [np.zeros(0, np.int64)])
        self.best_owner = np.repeat(np.arange(n), taken)

    def apply(self, progress: np.ndarray) -> None:
        values = progress[self.children]
        if self.op == "and":
            out = np.minimum.reduceat(values, self.starts)
        elif self.op == "or":
            out = np.maximum.reduceat(values, self.starts)
        elif self.op == "not":
            out = 1.0 - values
        elif self.op == "sum":
            out = clip01(np.add.reduceat(values if self.unweighted else values * self.weights, self.starts))
        else:  # at_least: the mean of the k best children, added best first
            out = np.bincount(self.best_owner, weights=self._sorted(values)[self.best], minlength=len(self.parents))
            out = out / self.k
        progress[self.block] = out

    def _sorted(self, values: np.ndarray) -> np.ndarray:
        """Each parent's children in ascending order, flat on the grid."""
        if self.uniform:
            grid = values.reshape(-1, self.width)
        else:
            grid = np.full(len(self.parents) * self.width, -1.0)
            grid[self.grid_position] = values
            grid = grid.reshape(-1, self.width)
        return np.sort(grid, axis=1).ravel()


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
    combinations: list[Combination]
    n_nodes: int
    names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.any_hold = bool(self.is_hold.any())
        self.any_ongoing = not self.not_ongoing.all()
        self.any_completion = bool(self.on_completion.any())
        self.unit_reward = bool((self.multiplier == 1.0).all())  # x * 1.0 is x: the product can go
        self.one_recipient = bool(np.array_equal(self.recipient_inst, np.arange(len(self.spec))))


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
        combos.setdefault((height, node.op), []).append((node_id, [c for c, _ in children], node))
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

    combinations = [_combination(op, entries) for (_, op), entries in sorted(combos.items())]
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


def _combination(op: str, entries: list) -> Combination:
    counts = np.array([len(children) for _, children, _ in entries], dtype=np.int64)
    weights = np.concatenate([np.array(node.weights if op == "sum" else [1.0] * len(children))
                              for _, children, node in entries])
    return Combination(
        op=op,
        parents=np.array([node_id for node_id, _, _ in entries], dtype=np.int64),
        children=np.concatenate([np.array(children, dtype=np.int64) for _, children, _ in entries]),
        starts=np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64),
        owner=np.repeat(np.arange(len(entries)), counts),
        weights=weights,
        k=np.array([max(node.n, 1) for _, _, node in entries], dtype=np.float64),
    )
