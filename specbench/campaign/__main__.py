"""``python -m specbench.campaign h200 [--budget-s 480] [--list]``: run (or list) the shape-only campaign.

Each call runs what fits in the budget and stops; call it again to resume (``make campaign`` does one chunk).
``smoke`` is the same plan on the tiny shapes on the CPU (``--only`` picks runs by id pattern).
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

from specbench.campaign.execute import PROFILES, Ledger, default_root, estimate_s, execute, overrides, select
from specbench.campaign.plan import runs


def show(plan, profile, root: Path, questions: int | None, verbose: bool) -> str:
    ledger = Ledger(root)
    per_task = questions or f"{profile.questions} (single-task runs) / {profile.many_task_questions or profile.questions}"
    lines = [f"campaign {profile.gpu}: {len(plan)} runs into {root} ({per_task} synthetic prompts per task, "
             f"{profile.max_new_tokens or 'max_new_tokens'} new tokens each); "
             "estimate = rough H200 seconds, a target's build counted once per stretch of runs on it"]
    total = left = 0.0
    for i, run in enumerate(plan, 1):
        est = estimate_s(run, profile.questions_for(run, questions), profile.new_tokens(run),
                         built=i > 1 and plan[i - 2].target_cell == run.target_cell)
        status = ledger.status(run.id) or "todo"
        total += est
        left += 0 if status == "done" else est
        lines.append(f"{i:3d}  {run.id:42s} {est:7.0f} s  {status:6s}  tau: {run.source()}")
        if verbose:
            lines.append("       " + " ".join(overrides(run, profile, root, questions)))
    lines.append(f"total {total / 3600:.1f} GPU h, left {left / 3600:.1f} GPU h")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m specbench.campaign", description=__doc__)
    parser.add_argument("profile", choices=sorted(PROFILES))
    parser.add_argument("--list", action="store_true", help="print the plan with an estimated GPU time per run")
    parser.add_argument("--verbose", action="store_true", help="with --list: each run's override list")
    parser.add_argument("--coverage", action="store_true", help="the cells the plan fills, per table (stand-in rows "
                        "from the composed configs, no GPU)")
    parser.add_argument("--budget-s", type=float, default=480.0, help="wall seconds for this chunk")
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--root", type=Path, help="campaign folder (default: the newest unfinished "
                        "results/<gpu>/<date>, else today's)")
    parser.add_argument("--only", nargs="*", help="run ids or patterns, e.g. 'hierspec_70b/*'")
    parser.add_argument("--questions", type=int, help="synthetic prompts per task (default: the profile's, "
                        "fewer on runs over Spec-Bench's six tasks)")
    parser.add_argument("--set", nargs="*", default=[], help="extra Hydra overrides for every run, e.g. "
                        "quant.backend=torch (they change the config hash: new runs)")
    parser.add_argument("--retry-failed", action="store_true")
    parser.add_argument("--manifests", type=Path, default=Path("experiments"), help="with --coverage")
    args = parser.parse_args(argv)

    profile = PROFILES[args.profile]
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    root = args.root or default_root(args.results, profile.gpu, today)
    questions = args.questions
    plan = select(runs(), args.only)
    if args.list:
        print(show(plan, profile, root, questions, args.verbose))
        return {}
    if args.coverage:
        from specbench.analysis.manifest import load_all
        from specbench.campaign.coverage import coverage

        print(coverage(plan, profile, load_all(args.manifests)).to_string(index=False))
        return {}
    counts = execute(plan, profile, root, args.budget_s, questions, tuple(args.set), args.retry_failed)
    failed = (f"; {counts['failed_left']} failed runs are skipped until --retry-failed (their logs say why)"
              if counts["failed_left"] and not args.retry_failed else "")
    print(f"chunk: {counts['done']} done, {counts['cut']} cut, {counts['failed']} failed, {counts['pending']} left; "
          + ("run the same command again to resume" if counts["pending"] else
             "nothing left to run" if counts["failed_left"] else "campaign complete") + failed)
    return counts


if __name__ == "__main__":
    main()
