"""Speculative steps enqueued from the device: acceptance and commit on the GPU, the host one step behind.

With greedy or replayed acceptance and a drafter that drafts from device tensors (``Drafter.propose_on_device``:
AR's empty draft, EAGLE-2/3, n-gram with fixed-size chains, HierSpec), no part of a step needs the host: the accepted
path (``accept_on_device``), the target's K/V compaction and the drafter's next inputs are computed on the device
that holds the verify's logits (``DeviceAcceptance``). The host enqueues step i + 1 and only then reads step i's
tokens (copied to pinned memory), so the GPU does not wait for the host between steps. A generation that ends at
step i has already enqueued step i + 1: that step is dropped, and the decode time ends when step i's tokens reach
the host (``Generation.dropped_steps`` counts it for the graphs' replays per step). A drafter that needs the last
step's count on the host (``Drafter.device_count_on_host``: HierSpec) gets it from replayed acceptance in advance;
under greedy acceptance each step is read before the next is enqueued.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from specbench.decoding.acceptance import accept
from specbench.decoding.drafter import Drafter
from specbench.decoding.graphs import GraphedCall
from specbench.decoding.phases import PhaseTimer
from specbench.decoding.replay import ReplayAcceptance
from specbench.decoding.sampling import SamplingParams
from specbench.decoding.session import ModelSession

if TYPE_CHECKING:
    from specbench.decoding.generate import Generation


def accept_on_device(tokens: torch.Tensor, parents: torch.Tensor, best: torch.Tensor, depth: int,
                     want: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The path ``accept_greedy`` (``want`` None) or ``ReplayAcceptance`` (``want``: the imposed accepted nodes, a
    device scalar) picks in a draft tree, computed without a host sync.

    ``tokens`` / ``parents`` [m]: the tree, parents first (-1: the root); ``best`` [m + 1]: the target's argmax of
    each verify row (row 0 the root); ``depth``: the most nodes a path holds. Returns ``count`` (accepted nodes, a
    scalar), ``rows`` [depth + 1] (the kept verify rows: the root's, the path's, then min(j, m) at every j > count) and
    ``out`` [depth + 1] (the path's tokens, the bonus token, then 0).
    """
    m, device = tokens.numel(), tokens.device
    node = torch.arange(m, device=device)
    parent_row = parents + 1
    if want is None:
        score = -node  # the first matching child
    else:  # the deepest branch, the first child on ties: height below each row, by ``depth`` relaxations
        height = torch.zeros(m + 1, dtype=torch.long, device=device)
        for _ in range(depth):
            height = torch.zeros_like(height).scatter_reduce(0, parent_row, height[1:] + 1, "amax")
        score = height[1:] * (m + 1) - node
    row = count = torch.zeros(1, dtype=torch.long, device=device)  # one-element tensors index without a host read
    going = torch.ones(1, dtype=torch.bool, device=device)
    rows, out = [row], []
    for level in range(depth):
        eligible = parent_row == row
        eligible &= tokens == best.index_select(0, row) if want is None else level < want
        pick = torch.where(eligible, score, -(m + 1) ** 2).argmax().view(1)
        going = going & eligible.any()
        count = count + going.long()
        row = torch.where(going, pick + 1, row)
        rows.append(torch.where(going, pick + 1, min(level + 1, m)))  # padding: in place, inside the verify
        out.append(torch.where(going, tokens.index_select(0, pick), 0))
    out = torch.cat(out + [torch.zeros_like(row)]).scatter(0, count, best.index_select(0, row))
    return count[0], torch.cat(rows), out


@dataclass
class _Slot:
    """A step's host buffers: its imposed accept length (pinned, in) and its packet (pinned, out)."""

    want: torch.Tensor
    host: torch.Tensor | None = None
    done: torch.cuda.Event | None = None  # recorded after the packet's copy


@dataclass
class DeviceCommit:
    """A step's commit, on the device: what the drafter reads to draft the next step."""

    tokens: torch.Tensor  # [depth + 1]: the accepted path's tokens, the bonus token, then padding
    kept: torch.Tensor  # [depth + 1, h]: the verify's output rows of the kept tokens (root first), then padding
    count: torch.Tensor  # []: accepted draft nodes (count + 1 tokens are kept)
    start: torch.Tensor  # []: the session's length before the commit, the slot of the first kept token
    scalars: torch.Tensor  # [2]: the next root token and the session's length after the commit
    # what the host knows of ``count`` before the next step is drafted: the count replayed acceptance imposed (the
    # count itself, unless the tree holds no path that long), or the count read back (``Drafter.device_count_on_host``)
    host_count: int | None = None


class DeviceAcceptance:
    """Accept a tree verified on ``session`` and commit it, all on the device: the path (``accept_on_device``), the
    session's K/V compaction, and the next step's inputs (``DeviceCommit``). One graph per tree size."""

    def __init__(self, session: ModelSession, depth: int, replay: bool):
        self.session, self.depth, self.replay = session, depth, replay
        self._graphs: dict[int, GraphedCall] = {}
        runner = session.runner
        self._accept = accept_on_device  # compiled with the model: Inductor fuses its few dozen tiny kernels
        if runner.compiled and runner.cuda_graphs:
            self._accept = torch.compile(accept_on_device, fullgraph=True, dynamic=False, mode=runner.compile_mode)

    def __call__(self, best: torch.Tensor, hidden: torch.Tensor, tree: torch.Tensor, scalars: torch.Tensor,
                 want: torch.Tensor) -> tuple[DeviceCommit, torch.Tensor]:
        """The commit of a verify's argmax tokens ``best`` [m + 1] and ``hidden`` rows over ``tree`` [3, m] at
        ``scalars`` (root, start) (``ForwardRunner.tree_on_device(best_only=True)``), and its packet for the host:
        the count, the path's tokens and the bonus token, then the tree's rows. ``want`` [1]: the imposed accepted
        nodes (replay; read by the graph, so a pinned buffer may hold it)."""
        m = tree.shape[1]
        if m not in self._graphs:
            # its own memory pool: its outputs carry a step's state past the next step's verify, whose intermediates
            # would overwrite them if both graphs drew on one pool
            self._graphs[m] = GraphedCall(self._step, None, f"device acceptance ({m} nodes)")
        call = self._graphs[m] if self.session.runner.cuda_graphs else self._graphs[m].fn
        *outputs, moves, packet = call(best, hidden, tree, scalars, want)
        if self.depth:  # the K/V compaction outside the graph: a capture runs its function more than once, and a
            # move is not idempotent (a kept row can land on a slot another kept row is read from)
            self.session.runner.cache.keep(moves[0], moves[1])
        return DeviceCommit(*outputs), packet

    def _step(self, best, hidden, tree, scalars, want):
        count, rows, out = self._accept(tree[0], tree[1], best, self.depth, want[0] if self.replay else None)
        length = scalars[1]
        moves = length + torch.stack([rows, torch.arange(self.depth + 1, device=rows.device)])
        kept = hidden.index_select(0, rows)
        after = torch.stack([out.gather(0, count.view(1))[0], length + count + 1])
        packet = torch.cat([count.view(1), out, tree.flatten()])
        return out, kept, count, length.clone(), after, moves, packet


def read_packet(values: list[int], depth: int) -> tuple[int, list[int], list[int]]:
    """A ``DeviceAcceptance`` packet read on the host: the accepted count, the path's tokens with the bonus token, and
    the tree's parents; raises for a tree whose pool held NaN cumulative log-probs."""
    count, m = values[0], (len(values) - depth - 2) // 3
    tree = values[depth + 2 :]  # tokens, parents, NaN count: m each
    if m and tree[2 * m]:
        raise FloatingPointError(f"EAGLE draft tree: {tree[2 * m]} candidates have NaN cumulative log-probs: the "
                                 "head's forward produced non-finite logits")
    return count, values[1 : count + 2], tree[m : 2 * m]


class DeviceLoop:
    """The device-side steps of one (target, drafter) pair; its graphs persist across generations."""

    RING = 3  # steps whose host buffers are in use at once: the one read, the one in flight, the one enqueued

    def __init__(self, target: ModelSession, drafter: Drafter, replay: bool):
        self.target, self.drafter, self.replay = target, drafter, replay
        self.depth = drafter.device_depth
        self.pinned = target.device.type == "cuda"
        self._acceptance = DeviceAcceptance(target, self.depth, replay)
        self._ring = [_Slot(torch.zeros(1, dtype=torch.long, pin_memory=self.pinned)) for _ in range(self.RING)]

    @staticmethod
    def usable(target: ModelSession, drafter: Drafter, acceptor, sampling: SamplingParams, prompt_len: int,
               max_new_tokens: int) -> bool:
        """Whether a generation can run on the device: a drafter that drafts there, greedy or replayed acceptance
        and a cache with room for every step at full size (near the end the host loop shrinks the tree): the step
        enqueued before the host knows the last one ended starts at most ``depth`` tokens past ``max_new_tokens``."""
        if not drafter.drafts_on_device:
            return False
        if not (isinstance(acceptor, ReplayAcceptance) or (acceptor is accept and sampling.greedy)):
            return False
        need = prompt_len + max_new_tokens + drafter.device_depth + drafter.device_tree_size
        return need <= target.runner.max_seq_len

    def run(self, tokens: list[int], out: Generation, max_new_tokens: int, stop_ids: frozenset[int], timer: PhaseTimer,
            rule: ReplayAcceptance | None) -> float:
        """Decode until ``max_new_tokens`` or a stop id, appending to ``tokens`` and ``out`` as the host loop does;
        return the ``perf_counter`` time at which the last step's tokens reached the host."""
        target, drafter = self.target, self.drafter
        target.settle()
        scalars = torch.tensor([tokens[-1], target.length], device=target.device)
        # a drafter that needs the last count on the host, which greedy acceptance only gives once the step has run:
        # each step is read before the next is enqueued (its drafting still runs from the device)
        ahead = 0 if drafter.device_count_on_host and rule is None else 1
        commit, step, pending = None, 0, []
        while True:
            commit, packet, again = self._enqueue(step, commit, scalars, timer, rule, tokens)
            out.reverified_steps += again
            scalars = commit.scalars
            pending.append(packet)
            step += 1
            if len(pending) <= ahead:
                continue
            ends, count = self._read(pending.pop(0), tokens, out, max_new_tokens, stop_ids)
            if not ahead:
                commit.host_count = count
            if ends:
                ended = time.perf_counter()
                out.dropped_steps = len(pending)
                if pending:
                    if rule is not None:
                        rule.steps -= len(pending)  # the dropped step's imposed length is the next step's
                    drafter.drop_device_step()
                return ended

    def _enqueue(self, step: int, commit: DeviceCommit | None, scalars: torch.Tensor, timer: PhaseTimer,
                 rule: ReplayAcceptance | None, tokens: list[int]):
        slot = self._ring[step % self.RING]
        if slot.done is not None:
            slot.done.synchronize()  # this slot's last step has been read
        wanted = rule.length() - 1 if rule is not None else 0
        want = slot.want
        if self.target.runner.cuda_graphs:  # copied in by the graph, after this slot's last copy has finished
            want.numpy()[0] = wanted
        else:
            want = torch.full((1,), wanted, device=self.target.device)
        timer.next_step()
        with timer.phase("draft"):
            tree = self.drafter.propose_on_device(commit, tokens)
        verifies = 0
        while tree is not None:  # a drafter that enqueued a guessed tree may revise it (``confirm_on_device``)
            verified, verifies = tree, verifies + 1
            with timer.phase("verify"):
                best, hidden = self.target.runner.tree_on_device(None, verified[:2], scalars, self.target.layers,
                                                                 best_only=True)
            with timer.phase("draft"):
                tree = self.drafter.confirm_on_device()
        with timer.phase("accept"):
            commit, packet = self._acceptance(best, hidden, verified, scalars, want)
            commit.host_count = wanted if rule is not None else None
            if slot.host is None or slot.host.numel() < packet.numel():  # a drafter's trees may vary in size
                slot.host = torch.empty(packet.numel(), dtype=packet.dtype, pin_memory=self.pinned)
            host = slot.host[: packet.numel()]
            host.copy_(packet, non_blocking=self.pinned)
            slot.done = torch.cuda.Event() if self.pinned else None
            if slot.done is not None:
                slot.done.record()
        return commit, (host, slot.done), verifies - 1

    def _read(self, packet, tokens: list[int], out: Generation, max_new_tokens: int,
              stop_ids: frozenset[int]) -> tuple[bool, int]:
        """Take a finished step's tokens as the host loop does; return whether the generation ends with it, and its
        accepted count."""
        host, done = packet
        if done is not None:
            done.synchronize()
        count, accepted, parents = read_packet(host.tolist(), self.depth)
        self.target.tokens += [tokens[-1]] + accepted[:-1]
        tokens += accepted
        depth: list[int] = []
        for p in parents:
            depth.append(1 if p < 0 else depth[p] + 1)
        return out.add_step(accepted, len(parents), max(depth, default=0), max_new_tokens, stop_ids), count


def device_loop(target: ModelSession, drafter: Drafter, replay: bool) -> DeviceLoop:
    """The ``DeviceLoop`` of ``drafter`` on ``target`` for greedy or replayed acceptance, built once."""
    key = (id(target), replay)
    if key not in drafter.device_loops:
        drafter.device_loops[key] = DeviceLoop(target, drafter, replay)
    return drafter.device_loops[key]
