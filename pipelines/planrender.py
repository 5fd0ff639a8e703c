"""The printed ``vismem plan``: stages by endpoint, totals, each GPU model's throughput line,
warnings, growth with J and the assumptions (:func:`render` of :func:`vismem.pipelines.plan.estimate`'s dict)."""

from __future__ import annotations

from typing import Any

from vismem.pipelines.plangpu import describe


def render(plan: dict[str, Any]) -> str:
    """The plan as plain text (stages by endpoint, totals, warnings, growth, assumptions)."""
    out = [f"plan for {plan['config']} ({plan['run_id']}) on {plan['gpus']} GPU(s)", "",
           f"{'stage':<17}{'endpoint':<22}{'kind':<7}{'calls':>12}{'tokens':>15}{'in flight':>10}"
           f"{'bound':>11}{'wall h':>9}{'GPU-h':>9}{'rpm':>8}{'USD':>10}"]
    for r in plan["stages"]:
        for e in r["endpoints"]:
            cost = e.get("cost_usd")
            out.append(f"{r['stage']:<17}{e['endpoint'][:21]:<22}{e['kind']:<7}{e['calls']:>12,.0f}{e['tokens']:>15,.0f}"
                       f"{e['in_flight']:>10,.0f}{e['bound_by']:>11}{e['wall_s'] / 3600:>9,.2f}{e['gpu_hours']:>9,.2f}"
                       f"{e.get('requests_per_min', 0):>8,.0f}{'' if cost is None else f'{cost:,.2f}':>10}")
    cost = plan["hosted_cost_usd"]
    out += [f"total: {plan['calls']:,.0f} calls ({plan['gpu_calls']:,.0f} on GPUs, {plan['hosted_calls']:,.0f} hosted), "
            f"{plan['tokens']:,.0f} tokens, {plan['gpu_hours']:,.2f} GPU-hours"
            + ("" if cost is None else f", hosted cost ${cost:,.2f}"),
            f"wall time on {plan['gpus']} GPU(s): {plan['wall_hours']:,.2f} h (stages in sequence)"]
    for r in plan["stages"]:
        for e in r["endpoints"]:
            if e["kind"] == "gpu":
                out.append(f"{e['endpoint']}: {e['replicas_held']} of {e['replicas']} replicas held, "
                           f"{e['streams_per_gpu']:.0f} streams per GPU ({e['streams_from']}), "
                           f"target_ongoing_requests {e['target']:g}")
                out.append("  " + describe(e, plan["utilisation"]))
    ad = plan.get("adaptive")
    if ad:
        out.append(f"adaptive probes (probes.mode adaptive, width {ad['width']:g} at J={ad['J']}): ~{ad['calls']:,.0f} "
                   f"probe calls, {ad['gpu_hours']:,.2f} GPU-hours, beside the exhaustive {ad['exhaustive_calls']:,.0f} "
                   f"calls, {ad['exhaustive_gpu_hours']:,.2f} GPU-hours ({ad['saving']:,.1f}x fewer; simulated at TSR 0.5, "
                   "the widest case; the rows above are the exhaustive plan)")
    out += [f"warning: {w}" for w in plan["warnings"]]
    out += ["", "probes per chain and architecture against J (exhaustive O(J^2), Monte Carlo O(J*M)):",
            f"{'J':>4}{'encode calls':>14}{'exhaustive':>12}{'MC (M=' + str(plan['growth'][0]['M']) + ')':>12}"]
    for g in plan["growth"]:
        out.append(f"{g['J']:>4}{g['encode_calls']:>14,.0f}{g['exhaustive']:>12,.0f}{g['mc']:>12,.0f}")
    out += ["", "bounds: offered/units/groups (the stage's work in flight), client (max_concurrency), kv (the "
            "replicas' KV cache), rate-limit (--rate endpoint_slots), compute / bandwidth (the GPUs held are "
            "saturated: prefill and vision FLOP, or decode's bytes), client-cpu (the client's own work)",
            "assumptions (override with --rate NAME=VALUE): "
            + ", ".join(f"{k}={v}" for k, v in plan["rates"].items()),
            "GPU utilisation without --calibration (serve/devices.yaml): "
            + ", ".join(f"{k}={v:g}" for k, v in plan["utilisation"].items())]
    return "\n".join(out)
