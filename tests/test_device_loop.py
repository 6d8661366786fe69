"""Steps run from the device (``DeviceLoop``): the same path, tokens and bookkeeping as the host loop."""

from __future__ import annotations

import copy

import pytest
import torch

from specbench.decoding.acceptance import accept, accept_greedy
from specbench.decoding.device_loop import DeviceLoop, accept_on_device, read_packet
from specbench.decoding.draft import Draft
from specbench.decoding.generate import generate
from specbench.decoding.phases import PhaseTimer
from specbench.decoding.replay import ReplayAcceptance
from specbench.decoding.sampling import SamplingParams
from specbench.drafters.ngram import lookup, lookup_on_device
from specbench.timing.trees import eagle_like_tree
from tests.drafter_stack import Stack


def device_path(draft: Draft, best: torch.Tensor, depth: int, want: int | None):
    rows = torch.tensor([draft.tokens, draft.parents]).view(2, len(draft))
    count, kept, out = accept_on_device(rows[0], rows[1], best, depth, None if want is None else torch.tensor(want))
    count = int(count)
    return [r - 1 for r in kept[1 : count + 1].tolist()], out[: count + 1].tolist(), kept, out, count


def one_hot(best: list[int], vocab: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(best), vocab).float()


@pytest.mark.parametrize("seed", range(6))
def test_greedy_and_replayed_paths_equal_the_host_rules(seed):
    depth, vocab = 5, 12  # a small vocabulary: many tokens match, many siblings share one (the first child wins)
    draft = eagle_like_tree(30, depth=depth, topk=3, vocab_size=vocab, seed=seed)
    g = torch.Generator().manual_seed(seed)
    for trial in range(20):
        best = torch.randint(0, vocab, (len(draft) + 1,), generator=g)
        if trial % 2:  # follow the tree for a while, so that paths are long
            for i, p in enumerate(draft.parents):
                if torch.rand((), generator=g) < 0.7:
                    best[p + 1] = draft.tokens[i]
        ref = accept_greedy(draft, one_hot(best.tolist(), vocab))
        nodes, tokens, rows, out, count = device_path(draft, best, depth, None)
        assert (nodes, tokens) == (ref.nodes, ref.tokens)
        assert rows[count + 1 :].tolist() == list(range(count + 1, depth + 1))  # padding: rows kept in place
        assert out[count + 1 :].tolist() == [0] * (depth - count)
        for want in range(depth + 2):
            rule = ReplayAcceptance(trace=[want + 1])
            ref = rule(draft, one_hot(best.tolist(), vocab))
            assert device_path(draft, best, depth, want)[:2] == (ref.nodes, ref.tokens), (trial, want)


def test_a_packet_reads_back_as_the_step_it_encodes():
    depth, tokens, parents = 3, [11, 12, 13, 14], [-1, 0, 1, 0]
    packet = [2, 11, 12, 99, 0] + tokens + parents  # two nodes accepted, then the bonus token 99, then padding
    assert read_packet(packet + [0] * 4, depth) == (2, [11, 12, 99], parents)
    with pytest.raises(FloatingPointError, match="3 candidates have NaN"):  # the NaN count, in every column
        read_packet(packet + [3] * 4, depth)
    assert read_packet([0, 5], 0) == (0, [5], [])  # AR: no tree


def test_the_device_lookup_equals_the_host_lookup():
    g = torch.Generator().manual_seed(0)
    for trial in range(200):  # a vocabulary of 5: n-grams recur often, several times, of every size
        size = int(torch.randint(1, 40, (), generator=g))
        tokens = torch.randint(0, 5, (size,), generator=g).tolist()
        min_n, num = int(torch.randint(1, 4, (), generator=g)), int(torch.randint(1, 6, (), generator=g))
        max_n = min_n + int(torch.randint(0, 3, (), generator=g))
        for match in ("earliest", "latest"):
            expected = lookup(tokens, min_n, max_n, num, match) or [tokens[-1]] * num  # on_miss="repeat"
            history = torch.tensor(tokens + [7] * 8)  # past the length: never read
            assert lookup_on_device(history, torch.tensor(size), min_n, max_n, num, match).tolist() == expected


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    return Stack(tmp_path_factory.mktemp("stack"), num_hidden_layers=4)


def prompts(n: int = 5):
    g = torch.Generator().manual_seed(1)
    return [torch.randint(3, 96, (4 + 3 * i,), generator=g).tolist() for i in range(n)]


@pytest.mark.parametrize("name", ["none", "eagle", "eagle3", "ngram_repeat"])
@pytest.mark.parametrize("replayed", [False, True])
def test_device_steps_equal_host_steps(stack, name, replayed):
    drafter = stack.drafter(name, strong=True)
    assert drafter.drafts_on_device
    rules = [ReplayAcceptance(trace=[3, 1, 4, 2, 4]) for _ in range(2)] if replayed else [None, None]
    lengths = []
    for prompt in prompts():
        host, dev = (generate(stack.session, drafter, prompt, max_new_tokens=30, on_device=on_device,
                              timer=PhaseTimer("cpu"), **({"acceptor": rule} if rule else {}))
                     for rule, on_device in zip(rules, (False, True)))
        assert dev.tokens == host.tokens and dev.accept_lengths == host.accept_lengths
        assert dev.drafted == host.drafted and dev.draft_depths == host.draft_depths
        assert (host.dropped_steps, dev.dropped_steps) == (0, 1)  # the device ran one step past the end
        assert (host.decode_loop, dev.decode_loop) == ("host", "device")  # what the rows record
        assert set(dev.phase_ms) == set(host.phase_ms) == {-1, *range(dev.steps)}  # the dropped step's: not kept
        lengths += dev.accept_lengths
    assert len(set(lengths)) > 2 or name == "none"  # drafts accepted, in varying lengths: the comparison tested paths
    if replayed:
        assert rules[0].steps == rules[1].steps  # the dropped step's imposed length goes to the next step


def near_copy(stack) -> dict:
    """A copy of the target with noise (5 % of each tensor's spread) on every weight, as a HierSpec intermediate: the
    target keeps whole chains at times and cuts others short under greedy acceptance."""
    path = stack.path / "near"
    if not path.exists():
        near = copy.deepcopy(stack.hf)
        g = torch.Generator().manual_seed(3)
        with torch.no_grad():
            for p in near.parameters():
                p.add_(torch.randn(p.shape, generator=g) * 0.05 * p.std())
        near.save_pretrained(path)
    return {"model": {"source": str(path)}}


def hierspec_pair(stack, drafter, prompt, inner_replayed: bool, outer_replayed: bool, device: bool):
    """Host and device generations of HierSpec, each with fresh rules."""
    runs = []
    for on_device in (False, True):
        drafter.ctx.acceptor = ReplayAcceptance(trace=[3, 1, 2]) if inner_replayed else accept
        outer = ReplayAcceptance(trace=[3, 1, 7, 2, 7, 5]) if outer_replayed else None  # 7: whole chains (4-6)
        out = generate(stack.session, drafter, prompt, max_new_tokens=30, on_device=on_device, acceptor=outer or accept,
                       **({} if device else {"timer": PhaseTimer("cpu")}))
        runs.append((out, outer and outer.steps, drafter.ctx.acceptor.steps if inner_replayed else None))
    return runs


@pytest.mark.parametrize("name", ["hierspec", "hierspec3"])
@pytest.mark.parametrize("inner_replayed", [False, True])
@pytest.mark.parametrize("outer_replayed", [False, True])
def test_hierspec_device_steps_equal_host_steps(stack, name, inner_replayed, outer_replayed):
    """HierSpec's rounds from the device: a varying number of rounds per step, the intermediate rolled back to the
    target's count (replayed: known in advance; greedy: read before the next step, so no step is dropped), and the
    chain's last token run through it when the target keeps the whole chain."""
    drafter = stack.drafter(name, **({} if outer_replayed else {"strong": True, **near_copy(stack)}))
    whole, partial, sizes = 0, 0, set()
    for prompt in prompts():
        (host, *host_steps), (dev, *dev_steps) = hierspec_pair(stack, drafter, prompt, inner_replayed, outer_replayed,
                                                               device=False)
        assert dev.tokens == host.tokens and dev.accept_lengths == host.accept_lengths
        assert dev.drafted == host.drafted and dev.draft_depths == host.draft_depths
        assert dev.dropped_steps == int(outer_replayed) and dev_steps == host_steps  # dropped: rounds go to the next
        assert set(dev.phase_ms) == {-1, *range(dev.steps)}
        whole += sum(a == d + 1 for a, d in zip(dev.accept_lengths[:-1], dev.drafted))
        partial += sum(a <= d for a, d in zip(dev.accept_lengths[:-1], dev.drafted))
        sizes |= set(dev.drafted)
        assert dev.reverified_steps == 0  # every tree holds the paths replay imposes: each guessed chain stands
    assert partial and len(sizes) > 1  # rollbacks, and chains of several lengths (rounds)
    # a whole chain kept (the intermediate runs its last token): not seen where a greedy target checks the paths an
    # EAGLE-3 head's tree had imposed on it; the other seven cases run it
    assert whole or (name, outer_replayed, inner_replayed) == ("hierspec3", False, True)


@pytest.mark.parametrize("outer_replayed", [False, True])
def test_hierspec_device_steps_equal_host_steps_when_a_guessed_chain_falls_short(stack, outer_replayed):
    """Inner trees of two nodes, often side by side: a round replay asks to keep 2 nodes then keeps 1, so the chain the
    device loop guessed and had verified is drafted on and verified again; the tokens are still the host loop's."""
    drafter = stack.drafter("hierspec", inner_tree_size=3, **({} if outer_replayed else near_copy(stack)))
    reverified, steps = 0, 0
    for prompt in prompts():
        (host, *host_steps), (dev, *dev_steps) = hierspec_pair(stack, drafter, prompt, True, outer_replayed,
                                                               device=False)
        assert dev.tokens == host.tokens and dev.accept_lengths == host.accept_lengths
        assert dev.drafted == host.drafted and dev_steps == host_steps
        reverified, steps = reverified + dev.reverified_steps, steps + dev.gpu_steps
    assert 0 < reverified < steps  # guesses wrong and right


def draft_model_pair(stack, drafter, prompt, replayed: bool, device: bool):
    """Host and device generations of the draft-model drafter (a near copy of the target drafting 4 tokens), each
    with the draft model's K/V of the committed prefix (all but the last two steps' slots) at its end."""
    runs = []
    for on_device in (False, True):
        drafter.session.runner.cache.kv.zero_()  # a slot this generation does not write is not the last one's
        out = generate(stack.session, drafter, prompt, max_new_tokens=30, on_device=on_device,
                       acceptor=ReplayAcceptance(trace=[3, 1, 7, 2, 5]) if replayed else accept,
                       **({} if device else {"timer": PhaseTimer("cpu")}))
        settled = len(prompt) + len(out.tokens) - 2 * (drafter.num_tokens + 1)
        runs.append((out, drafter.session.runner.cache.kv.narrow(4, 0, settled).clone()))  # dim 4: the slots
    return runs


@pytest.mark.parametrize("replayed", [False, True])
def test_draft_model_device_steps_equal_host_steps(stack, replayed):
    """Draft-model chains from the device: each argmax fed back on the device, the draft model's cache cut at the
    target's count, and the chain's last token fed with the bonus token when the target keeps the whole chain."""
    drafter = stack.drafter("draft_model", **near_copy(stack))
    assert drafter.drafts_on_device and not stack.drafter("draft_model", SamplingParams(temperature=0.8)).drafts_on_device
    whole = partial = 0
    for prompt in prompts():
        (host, host_kv), (dev, dev_kv) = draft_model_pair(stack, drafter, prompt, replayed, device=False)
        assert dev.tokens == host.tokens and dev.accept_lengths == host.accept_lengths
        assert dev.drafted == host.drafted == [4] * dev.steps and dev.dropped_steps == int(replayed)
        torch.testing.assert_close(dev_kv, host_kv)  # every kept token went through the draft model
        whole += sum(a == 5 for a in dev.accept_lengths[:-1])
        partial += sum(a < 5 for a in dev.accept_lengths[:-1])
    assert whole and partial


def test_the_host_loop_runs_where_the_device_loop_cannot(stack):
    """Sampling, a host drafter, or a cache without room for full steps: ``usable`` refuses, the host loop runs."""
    eagle, ngram = stack.drafter("eagle", strong=True), stack.drafter("ngram")  # no draft on a miss: sizes vary
    session = stack.session
    assert DeviceLoop.usable(session, eagle, ReplayAcceptance(tau=2), SamplingParams(), 10, 30)
    assert DeviceLoop.usable(session, eagle, accept, SamplingParams(), 10, 30)
    assert not DeviceLoop.usable(session, eagle, accept, SamplingParams(temperature=0.8), 10, 30)
    assert not DeviceLoop.usable(session, ngram, accept, SamplingParams(), 10, 30)
    hierspec = stack.drafter("hierspec")
    assert DeviceLoop.usable(session, hierspec, ReplayAcceptance(tau=2), SamplingParams(), 10, 30)
    assert DeviceLoop.usable(session, hierspec, accept, SamplingParams(), 10, 30)
    assert not DeviceLoop.usable(session, hierspec, accept, SamplingParams(temperature=0.8), 10, 30)
    room = session.runner.max_seq_len
    assert not DeviceLoop.usable(session, eagle, accept, SamplingParams(), 10, room - 10)
    prompt = prompts()[0]
    near_end = generate(session, eagle, prompt, max_new_tokens=room - len(prompt) - 4, on_device=True)
    assert near_end.dropped_steps == 0 and len(near_end.tokens) == room - len(prompt) - 4
    assert near_end.decode_loop == "host"  # asked for the device loop, refused by ``usable``: the row says so


def test_eos_found_on_the_device_path_stops_like_the_host_path(stack):
    drafter = stack.drafter("eagle", strong=True)
    prompt = prompts()[2]
    free = generate(stack.session, drafter, prompt, max_new_tokens=30, on_device=False)
    stop = free.tokens[len(free.tokens) // 2]
    host, dev = (generate(stack.session, drafter, prompt, max_new_tokens=30, stop_ids=frozenset({stop}),
                          on_device=on_device) for on_device in (False, True))
    assert dev.tokens == host.tokens and dev.stop_reason == host.stop_reason == "eos"
    assert dev.accept_lengths == host.accept_lengths and dev.tokens[-1] == stop


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("replayed", [False, True])
@pytest.mark.parametrize("name", ["none", "eagle", "ngram_repeat"])
def test_device_steps_equal_host_steps_with_cuda_graphs(tmp_path, replayed, name):
    """The GPU path: the acceptance graph, pinned ring buffers, the host reading one step behind."""
    stack = Stack(tmp_path, num_hidden_layers=4, device="cuda")
    drafter = stack.drafter(name, strong=True)
    for prompt in prompts():
        host, dev = (generate(stack.session, drafter, prompt, max_new_tokens=30, on_device=on_device,
                              **({"acceptor": ReplayAcceptance(trace=[3, 1, 4, 2, 4])} if replayed else {}))
                     for on_device in (False, True))
        assert dev.tokens == host.tokens and dev.accept_lengths == host.accept_lengths and dev.dropped_steps == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("inner_replayed, inner_tree_size", [(False, 6), (True, 6), (True, 3)])
@pytest.mark.parametrize("outer_replayed", [False, True])
def test_hierspec_device_steps_equal_host_steps_with_cuda_graphs(tmp_path, inner_replayed, inner_tree_size,
                                                                 outer_replayed):
    """HierSpec's rounds on the GPU: pinned packets read mid-step (or, replayed, after the target's verify of the
    guessed chain is enqueued; trees of 3 make some guesses wrong), the round graphs' outputs copied before reuse."""
    stack = Stack(tmp_path, num_hidden_layers=4, device="cuda")
    drafter = stack.drafter("hierspec", inner_tree_size=inner_tree_size,
                            **({} if outer_replayed else near_copy(stack)))
    for prompt in prompts():
        (host, *host_steps), (dev, *dev_steps) = hierspec_pair(stack, drafter, prompt, inner_replayed, outer_replayed,
                                                               device=True)
        assert dev.tokens == host.tokens and dev.accept_lengths == host.accept_lengths
        assert dev.drafted == host.drafted and dev_steps == host_steps and dev.dropped_steps == int(outer_replayed)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("replayed", [False, True])
def test_draft_model_device_steps_equal_host_steps_with_cuda_graphs(tmp_path, replayed):
    stack = Stack(tmp_path, num_hidden_layers=4, device="cuda")
    drafter = stack.drafter("draft_model", **near_copy(stack))
    for prompt in prompts():
        (host, host_kv), (dev, dev_kv) = draft_model_pair(stack, drafter, prompt, replayed, device=True)
        assert dev.tokens == host.tokens and dev.accept_lengths == host.accept_lengths
        torch.testing.assert_close(dev_kv, host_kv)
        assert dev.dropped_steps == int(replayed)
