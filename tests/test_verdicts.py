"""The verdict rules and the same-error comparison of the investigation engine.

Probe results here are literal dicts shaped like the patient's, so each rule
is pinned on its own; the paths that run real probes are in
test_healthy_verdicts.py, test_zoo_check.py and test_tui.py.
"""

from __future__ import annotations

from pathlib import Path

from torchdoctor.investigation.findings import Finding, raised_at
from torchdoctor.investigation.hypotheses import entry_of, support
from torchdoctor.investigation.sameness import same_error
from torchdoctor.investigation.verdicts import judge, settle_rivals
from torchdoctor.parse import parse_traceback

ROOT = Path(__file__).resolve().parents[1]
ERROR = {"type": "RuntimeError",
         "message": "one of the variables needed for gradient computation has been modified "
                    "by an inplace operation: [torch.FloatTensor [4, 8]] is at version 2; "
                    "expected version 1 instead."}
HYPOTHESIS = {"confirm": [{"fact": "inplace_op", "exists": True}],
              "reject": [{"fact": "raised", "eq": False}]}


def result(status, **facts):
    return {"probe": "anomaly_rerun", "status": status, "summary": "s", "facts": facts,
            "location": None}


def test_a_rerun_that_raised_nothing_did_not_reach_the_failing_code():
    judged = judge(HYPOTHESIS, result("pass", raised=False), {}, ERROR)
    assert judged.verdict == "inconclusive"
    assert "did not reach the failing code" in judged.reason


def test_without_an_error_to_reproduce_the_same_facts_may_reject():
    assert judge(HYPOTHESIS, result("pass", raised=False), {}, None).verdict == "rejected"


def test_a_rerun_that_failed_differently_decides_nothing():
    other = result("fail", raised=True, inplace_op="mul_", error_type="AttributeError",
                   error_message="'NoneType' object has no attribute 'shape'")
    judged = judge(HYPOTHESIS, other, {}, ERROR)
    assert judged.verdict == "error" and "AttributeError" in judged.reason


def test_the_same_error_reproduced_confirms_on_its_facts():
    same = result("fail", raised=True, inplace_op="mul_", error_type="RuntimeError",
                  error_message=ERROR["message"].replace("version 2", "version 3"))
    judged = judge(HYPOTHESIS, same, {}, ERROR)
    assert judged.verdict == "confirmed" and judged.evidence == {"inplace_op": "mul_"}
    assert judged.support == 1


def test_a_check_that_passed_confirms_nothing():
    hypothesis = {"confirm": [{"fact": "ratio", "gt": 0.9}]}
    judged = judge(hypothesis, {"status": "pass", "facts": {"ratio": 1.01}}, {}, None)
    assert judged.verdict == "inconclusive" and "confirms nothing" in judged.reason
    judged = judge(hypothesis, {"status": "inconclusive", "facts": {"ratio": 1.01}}, {}, None)
    assert judged.verdict == "inconclusive"


def test_facts_that_contradict_a_hypothesis_reject_it_even_when_it_would_confirm():
    hypothesis = {"confirm": [{"fact": "features", "ne": 9216}],
                  "reject": [{"fact": "input_dims", "lt": 2}]}
    judged = judge(hypothesis, {"status": "fail", "facts": {"features": 57600,
                                                            "input_dims": 1}}, {}, None)
    assert judged.verdict == "rejected"


def test_a_crashed_probe_is_an_error_and_one_that_cannot_run_is_untested():
    crashed = {"status": "error", "summary": "the probe itself failed: KeyError: 'x'",
               "facts": {}}
    assert judge(HYPOTHESIS, crashed, {}, ERROR).verdict == "error"
    cannot = {"status": "error", "summary": "probe 'census' needs a model", "facts": {},
              "untested": True}
    judged = judge(HYPOTHESIS, cannot, {}, ERROR)
    assert judged.verdict == "untested" and judged.reason == "probe 'census' needs a model"


def test_rivals_of_one_entry_keep_only_the_best_supported_confirmation():
    def finding(key, evidence):
        return Finding(probe="trace", status="fail", summary="", hypothesis=key,
                       verdict="confirmed", location=None, facts={}, evidence=evidence,
                       support=len(evidence))

    weak = finding("shape.linear/in_features_wrong", {"feature_count": 57600})
    strong = finding("shape.linear/flatten_merged_batch", {"feature_count": 57600,
                                                           "input_dims": 1})
    other = finding("training.loss_constant/step_not_called", {"step_called": False})
    settle_rivals([weak, strong, other], entry_of, support)
    assert [f.verdict for f in (weak, strong, other)] == ["inconclusive", "confirmed",
                                                          "confirmed"]
    assert "flatten_merged_batch" in weak.reason


def test_raised_at_is_the_failing_frame_with_the_module_the_rerun_saw():
    error = {"type": "RuntimeError", "message": "m",
             "user_frame": {"file": "model.py", "line": 23, "function": "forward",
                            "code": "x = self.fc(x)"}}
    site = raised_at(error, {"facts": {"raised": True, "failing_module": "fc"}})
    assert site == {"file": "model.py", "line": 23, "code": "x = self.fc(x)", "module": "fc"}
    assert raised_at({"type": None, "message": "loss stays at 2.30"}) is None


# -- same error -------------------------------------------------------------------------

def test_a_pasted_failure_and_the_same_rerun_compare_equal():
    """The parsed paste against the patient's raw error with its own traceback's frame."""
    text = (ROOT / "tests" / "fixtures" / "examples" / "linear_mismatch.txt").read_text()
    pasted = parse_traceback(text).to_dict()
    rerun = {"type": pasted["type"], "message": pasted["message"],
             "user_frame": parse_traceback(text).user_frame.location()}
    assert same_error(pasted, rerun).same


def test_addresses_timings_and_a_changed_batch_size_do_not_make_another_error():
    base = {"type": "RuntimeError",
            "message": "mat1 and mat2 shapes cannot be multiplied (64x57600 and 9216x128)"}
    batch = {**base, "message": base["message"].replace("64x", "32x")}
    assert same_error(base, batch).same
    worker = {"type": "RuntimeError", "message": "DataLoader worker (pid 4123) is killed "
              "by signal: Killed. after 12.5 s at 0x7f3a2c"}
    assert same_error(worker, {**worker, "message": worker["message"]
                               .replace("4123", "977").replace("12.5", "3.1")
                               .replace("0x7f3a2c", "0x55aa10")}).same


def test_a_different_error_is_said_plainly():
    base = {"type": "RuntimeError",
            "message": "mat1 and mat2 shapes cannot be multiplied (64x57600 and 9216x128)"}
    shapes = same_error(base, {**base, "message": "mat1 and mat2 shapes cannot be "
                                                  "multiplied (64x1024 and 2048x10)"})
    assert not shapes.same and shapes.difference.startswith("different numbers")
    kind = same_error(base, {"type": "IndexError", "message": "index out of range in self"})
    assert not kind.same and kind.difference == "IndexError instead of RuntimeError"
    frame = {"file": "/home/a/train.py", "line": 40, "function": "main", "code": "y = f(x)"}
    moved = same_error({**base, "user_frame": frame},
                       {**base, "user_frame": {**frame, "file": "/home/a/eval.py"}})
    assert not moved.same and moved.difference == ("raised at eval.py:40 in main instead "
                                                    "of train.py:40 in main")


def test_an_input_without_its_batch_dimension_rejects_a_wrong_in_features():
    """The recorded input [57600] was flattened batch and all: no width typo explains it."""
    from torchdoctor.knowledge import load_knowledge
    from torchdoctor.match import diagnose

    diagnosis = diagnose("RuntimeError: mat1 and mat2 shapes cannot be multiplied "
                         "(1x57600 and 9216x128)", load_knowledge())
    match = diagnosis.matches[0]
    hypotheses = {h["id"]: h for h in match.hypotheses}
    trace = {"status": "fail", "facts": {"raised": True, "input_shapes": [[57600]],
                                         "feature_count": 57600, "error_type": "RuntimeError",
                                         "error_message": "mat1 and mat2 shapes cannot be "
                                                          "multiplied (1x57600 and 9216x128)"}}
    error = diagnosis.to_dict()["error"]
    assert judge(hypotheses["wrong_in_features"], trace, match.fields, error).verdict == \
        "rejected"
    # The flattened batch itself is judged on the failing run's recording, by provenance.
    provenance = {"status": "fail", "facts": {"raised": True, "batch_merged": True}}
    assert judge(hypotheses["flattened_batch"], provenance, match.fields, error).verdict == \
        "confirmed"


def _confirmed(key, support=1):
    return Finding(probe="p", status="fail", summary="", hypothesis=key, verdict="confirmed",
                   location=None, facts={}, support=support)


def test_a_cause_that_explains_a_generic_symptom_sets_the_symptom_aside():
    from torchdoctor.investigation.verdicts import settle_across

    symptom = _confirmed("training.cannot_overfit_batch/optimisation_bug", support=3)
    cause = _confirmed("training.missing_zero_grad/no_zero_grad")
    declared = {symptom.hypothesis: (["training.missing_zero_grad"], [])}
    settle_across([symptom, cause], lambda key: declared.get(key, ([], [])), support)
    assert (symptom.verdict, cause.verdict) == ("inconclusive", "confirmed")
    assert "training.missing_zero_grad/no_zero_grad" in symptom.reason


def test_a_symptom_stays_confirmed_when_no_cause_that_explains_it_is():
    from torchdoctor.investigation.verdicts import settle_across

    symptom = _confirmed("training.cannot_overfit_batch/optimisation_bug")
    unrelated = _confirmed("memory.growing/tensors_kept_with_graph")
    rejected = _confirmed("training.missing_zero_grad/no_zero_grad")
    rejected.verdict = "rejected"
    declared = {symptom.hypothesis: (["training.missing_zero_grad"], [])}
    settle_across([symptom, unrelated, rejected], lambda key: declared.get(key, ([], [])),
                  support)
    assert (symptom.verdict, unrelated.verdict) == ("confirmed", "confirmed")


def test_of_two_causes_that_exclude_each_other_the_better_supported_stays():
    from torchdoctor.investigation.verdicts import settle_across

    weak = _confirmed("training.lr_too_high/rate_above_divergence", support=1)
    strong = _confirmed("numerics.nan_loss/unstable_op", support=2)
    declared = {weak.hypothesis: ([], ["numerics.nan_loss/unstable_op"])}
    settle_across([weak, strong], lambda key: declared.get(key, ([], [])), support)
    assert (weak.verdict, strong.verdict) == ("inconclusive", "confirmed")
    assert "excludes numerics.nan_loss/unstable_op" in weak.reason


def test_a_probe_that_could_not_tell_says_why_instead_of_confirming():
    hypothesis = {"confirm": [{"fact": "learned", "eq": False}]}
    cut = {"probe": "overfit_batch", "status": "inconclusive", "location": None,
           "summary": "ran out of its 20 s after 9 of 150 steps", "facts": {"learned": False}}
    judgement = judge(hypothesis, cut, {})
    assert judgement.verdict == "inconclusive"
    assert judgement.reason == "the probe could not tell: ran out of its 20 s after 9 of 150 steps"


def test_the_shipped_knowledge_base_declares_the_generic_symptoms_explained():
    from torchdoctor.investigation.checkup import relations
    from torchdoctor.knowledge import load_knowledge

    kb = load_knowledge(include_user=False)
    explained, _ = relations("training.cannot_overfit_batch/optimisation_bug", kb)
    assert {"training.missing_zero_grad", "training.softmax_into_cross_entropy",
            "training.detached_graph", "training.loss_constant"} <= set(explained)
    explained, _ = relations("training.lr_too_high/rate_above_divergence", kb)
    assert "numerics.nan_loss/unstable_op" in explained


def test_a_checkup_keeps_one_cause_and_tells_the_demoted_check_again():
    from torchdoctor.investigation import checkup
    from torchdoctor.knowledge import load_knowledge

    kb = load_knowledge(include_user=False)
    overfit = {"status": "fail", "summary": "cannot overfit one batch", "location": None,
               "facts": {"learned": False, "reduction": 0.99, "steps_to_fit": None,
                         "patience_steps": 1500}}
    order = {"status": "fail", "summary": "gradients accumulate", "location": None,
             "facts": {"accumulating": True, "zero_grad_before_step": False,
                       "step_before_backward": False, "eval_mode_during_training": False}}
    checks = [checkup.judge("overfit_batch", overfit, kb)]
    assert checks[0].finding.verdict == "confirmed"
    checks.append(checkup.judge("loop_order", order, kb))
    demoted = checkup.settle(checks, kb)
    assert demoted == [checks[0]] and checks[0].hypothesis is None
    assert [c.finding.verdict for c in checks] == ["inconclusive", "confirmed"]
    assert checks[1].finding.hypothesis == "training.missing_zero_grad/no_zero_grad"
