"""Eq. (1) from the graphs a generation replays (``timing.step_replays``, ``decoding.graphs.counting_replays``)."""

from types import SimpleNamespace

import pytest
import torch

from specbench.config import EngineConf, ModelConf
from specbench.decoding.generate import Generation, generate
from specbench.decoding.graphs import GraphedCall, counting_replays
from specbench.decoding.replay import ReplayAcceptance
from specbench.engine import Engine
from specbench.model.footprint import forward_bytes
from specbench.timing.step_replays import decode_replays, step_time


def fake_graph(label: str, calls: list[str], reads: int = 0) -> GraphedCall:
    """A GraphedCall whose captured graph is a stand-in that records its replays (no CUDA needed)."""
    call = GraphedCall(lambda: None, label=label, reads=reads)
    call.graph = SimpleNamespace(replay=lambda: calls.append(label))
    return call


def test_counting_replays_counts_each_graph_inside_the_block_only():
    calls: list[str] = []
    a, b = fake_graph("a", calls), fake_graph("b", calls)
    a()
    with counting_replays() as outer:
        a(), b(), a()
        with counting_replays() as inner:
            b()
        a()
    b()
    assert outer == {a: 3, b: 1} and inner == {b: 1} and len(calls) == 7


def test_decode_replays_subtracts_the_prefill_and_step_time_weights_each_graph():
    calls: list[str] = []
    prefill, verify, draft = fake_graph("prefill", calls), fake_graph("verify", calls, 6000), fake_graph("draft", calls)

    def run(new_tokens: int) -> Generation:
        prefill(), verify()  # the prompt's forwards: one of them is also a step's graph
        gen = Generation(4, [0])
        for _ in range(new_tokens - 1):
            draft(), draft(), verify()
            gen.accept_lengths.append(1)
        return gen

    replays, gen = decode_replays(run, 6)
    assert gen.steps == 5 and replays == {draft: 10, verify: 5}
    terms = {t.label: t for t in step_time(replays, gen.steps, "cpu", repeats=3, warmup=1)}
    assert terms["draft"].replays_per_step == 2 and terms["verify"].replays_per_step == 1
    assert terms["draft"].ms_per_step == pytest.approx(2 * terms["draft"].median_ms)
    assert terms["verify"].bytes_read == 6000 and terms["verify"].bound_ms(3e6) == pytest.approx(2.0)
    assert terms["draft"].bytes_read == 0 and terms["draft"].bound_ms(3e6) is None  # not counted: no bound
    with pytest.raises(ValueError, match="no decoding step"):
        step_time(replays, 0, "cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_an_eagle_step_replays_the_verify_the_first_pass_and_the_expansion_once_each():
    engine = Engine(EngineConf(), device="cuda", dtype="float16", max_seq_len=256)
    session = engine.session(engine.model(ModelConf("tiny-target", shape_only=True)))
    drafter = engine.drafter({"name": "eagle", "head": "random", "topk": 4, "depth": 3, "tree_size": 10}, session)
    replay = ReplayAcceptance(tau=2.5)

    def run(new_tokens: int) -> Generation:
        replay.steps = 0
        return generate(session, drafter, list(range(3, 40)), max_new_tokens=new_tokens, acceptor=replay)

    run(24)  # captures every graph
    replays, gen = decode_replays(run, 24)
    assert gen.dropped_steps == 1  # steps run from the device (DeviceLoop): the GPU ran one past the end
    per_step = {call.label: n / gen.gpu_steps for call, n in replays.items()}
    assert per_step.pop("tiny-target[10]") == 1  # the verify of the 10-token tree, at exactly its size
    assert per_step.pop("EAGLE expansion (2 passes of 4 rows)") == 1
    assert per_step.pop("device acceptance (9 nodes)") == 1
    # the head's first pass over each step's accepted tokens (all four rows, the unused ones padding); the first
    # step's root came from the prompt's (eager) pass
    assert per_step == {"EagleHead[4]": pytest.approx((gen.gpu_steps - 1) / gen.gpu_steps)}
    terms = step_time(replays, gen.gpu_steps, "cuda", repeats=5, warmup=2)
    assert all(t.median_ms > 0 for t in terms) and len(terms) == len(replays)
    reads = {t.label: t.bytes_read for t in terms}  # each forward's weights; the expansion's, two head passes
    assert reads["tiny-target[10]"] == forward_bytes(session.model) and reads["device acceptance (9 nodes)"] == 0
    assert reads["EAGLE expansion (2 passes of 4 rows)"] == 2 * reads["EagleHead[4]"] > 0
