"""Answer + judge path end to end over HTTP: local OpenAI-compatible server, scripted backends."""

from __future__ import annotations

import polars as pl
import pytest

from vismem.memory.dialogue import answering as A
from vismem.memory.dialogue.scoring import accuracy_table, score_answers
from vismem.serve.backends.scripted import MALFORMED_TEXT, ScriptedVLM
from vismem.serve.build import build_vlm
from vismem.serve.openai_server import LocalOpenAIServer

UNITS = pl.DataFrame({
    "variant": ["memshot", "memshot", "text-rag"], "conversation_id": ["c1"] * 3,
    "unit_id": ["m1", "m2", "s1"], "dia_ids": [["D1:1"], ["D1:2"], ["D1:1", "D1:2"]],
    "modality": ["image", "image", "text"],
    "text": [None, None, "DATE: 1:56 pm on 8 May, 2023\nCONVERSATION:\nCaroline said, \"I went to a group.\""],
    "image_key": ["shots/m1.png", "shots/m2.png", None],
})
QUESTIONS = pl.DataFrame({
    "conversation_id": ["c1", "c1"], "question_id": ["q1", "q2"],
    "question": ["When did Caroline go to the group?", "What did Melanie paint?"],
    "answer": ["7 May 2023", "a sunrise"], "category": ["temporal", "single-hop"], "category_code": ["2", "4"],
    "evidence": [["D1:1"], ["D1:2"]], "speaker_a": ["Caroline"] * 2, "speaker_b": ["Melanie"] * 2,
})
IMAGES = {"shots/m1.png": b"\x89PNG\r\n\x1a\nfake-1", "shots/m2.png": b"\x89PNG\r\n\x1a\nfake-22"}


def _client(srv: LocalOpenAIServer) -> dict:
    return {"name": "openai", "args": {"model": srv.model_id, "base_url": srv.base_url, "api_key_env": None,
                                       "max_retries": 1, "backoff_s": 0.01, "timeout_s": 10}}


def test_answer_message_shots_and_text():
    q = QUESTIONS.row(0, named=True)
    shots = A.build_answer_message("locomo", q, UNITS.head(2).to_dicts(), IMAGES.__getitem__)
    assert shots.images == (IMAGES["shots/m1.png"], IMAGES["shots/m2.png"])
    assert "memory shots" in shots.text and "Caroline and Melanie" in shots.text
    assert shots.text.rstrip().endswith("Use DATE of CONVERSATION to answer with an approximate date. Short answer:")
    text = A.build_answer_message("locomo", QUESTIONS.row(1, named=True), UNITS.tail(1).to_dicts())
    assert text.images == () and "Caroline said" in text.text and "approximate date" not in text.text
    lme = A.build_answer_message("longmemeval", {**q, "question_date": "2023/05/30"}, UNITS.tail(1).to_dicts())
    assert "History Chats:" in lme.text and "Current Date: 2023/05/30" in lme.text


def test_answer_and_judge_over_http_with_malformed_and_failing_replies():
    # Answer model: first call fails with 500 twice (exhausts 1 retry) -> error row; then replies.
    answerer = ScriptedVLM(["7 May 2023", MALFORMED_TEXT, "a sunrise"], label="answers", cycle=True,
                           fail_first=2, fail_status=500)
    judge = ScriptedVLM(['Same date.\n{"label": "CORRECT"}', "\x00<<garbled>> }{"], label="judge")
    ranked = pl.DataFrame({"variant": ["memshot"] * 4 + ["text-rag"] * 2, "conversation_id": ["c1"] * 6,
                           "question_id": ["q1", "q1", "q2", "q2", "q1", "q2"], "rank": [1, 2, 1, 2, 1, 1],
                           "unit_id": ["m1", "m2", "m2", "m1", "s1", "s1"], "score": [0.0] * 6})
    tasks = A.answer_tasks(ranked, ks=[1, 2])
    assert tasks.height == 8 and tasks.filter(pl.col("k") == 2)["unit_ids"].to_list()[0] == ["m1", "m2"]
    with LocalOpenAIServer(answerer, model_id="scripted-answers") as a_srv, \
            LocalOpenAIServer(judge, model_id="scripted-judge") as j_srv:
        vlm = build_vlm(_client(a_srv))
        answers = A.generate_answers(tasks, UNITS, QUESTIONS, vlm, dataset="locomo",
                                     read_image=IMAGES.__getitem__, concurrency=1)
        judged = A.judge_answers(answers, QUESTIONS, build_vlm(_client(j_srv)), dataset="locomo", concurrency=1,
                                 retries=0)
    status = judged["answer_status"].to_list()
    assert status[0] == "error:http_500"                     # both attempts failed: recorded, not raised
    assert status.count("malformed") >= 1 and status.count("ok") >= 3
    ok = judged.filter(pl.col("answer_status") == "ok")
    assert set(ok["judge_status"].to_list()) <= {"ok", "malformed"} and "malformed" in ok["judge_status"].to_list()
    assert judged.filter(pl.col("prediction").is_null())["judge_status"].unique().to_list() == ["skipped"]
    # memshot rows carried their shots through the HTTP wire format
    assert judged.filter(pl.col("variant") == "memshot")["n_images"].to_list() == [1, 1, 2, 2]
    # scoring works on the result, failures counted
    full = judged.join(QUESTIONS.select("conversation_id", "question_id", "answer", "category"),
                       on=["conversation_id", "question_id"])
    scored = score_answers(full.with_columns(pl.col("judge_label").alias("correct")), "locomo")
    table = accuracy_table(scored)
    assert table.filter(pl.col("category") == "overall")["judge_failures"].sum() >= 2


def test_unreadable_shot_is_a_row_not_a_crash():
    tasks = pl.DataFrame({"variant": ["memshot"], "k": [1], "conversation_id": ["c1"], "question_id": ["q1"],
                          "unit_ids": [["m1"]]})

    def broken(_key):
        raise FileNotFoundError("gone")

    out = A.generate_answers(tasks, UNITS, QUESTIONS, ScriptedVLM("x"), dataset="locomo", read_image=broken)
    assert out["answer_status"][0] == "error:input:FileNotFoundError" and out["prediction"][0] is None


@pytest.mark.parametrize("text,bad", [("Paris", False), ("", True), (None, True), (MALFORMED_TEXT, True)])
def test_is_malformed_answer(text, bad):
    assert A.is_malformed_answer(text) is bad


def test_longmemeval_judging_uses_the_question_type_prompt():
    """LongMemEval: per-type prompts (the judge sees which), yes/no parsing, abstention ids."""
    seen = []

    class Recorder:
        name = "recorder"

        def chat(self, messages, *, max_tokens=512, temperature=0.0):
            from vismem.serve.vlm import ChatResult

            seen.append(messages[0].text)
            tokens.append(max_tokens)
            return ChatResult(text=["Yes.", "no", "unsure"][(len(seen) - 1) % 3], latency_s=0.0)

    tokens: list[int] = []

    qs = pl.DataFrame({"conversation_id": ["r1", "r2", "r3"], "question_id": ["q1", "q2", "q3_abs"],
                       "question": ["How many days?", "Where now?", "Who?"], "answer": ["18", "Paris", "unknown"],
                       "category": ["temporal-reasoning", "knowledge-update", "single-session-user"],
                       "category_code": ["temporal-reasoning", "knowledge-update", "single-session-user"]})
    answers = pl.DataFrame({"variant": ["memshot"] * 3, "k": [5] * 3, "conversation_id": ["r1", "r2", "r3"],
                            "question_id": ["q1", "q2", "q3_abs"], "prediction": ["19 days", "Rome", "Bob"]})
    out = A.judge_answers(answers, qs, Recorder(), dataset="longmemeval", concurrency=1, retries=0)
    # the official reading ('yes' in reply.lower()) for a yes; "unsure" has no verdict: a judge
    # failure, where the official script would have scored the answer wrong ...
    assert out["judge_label"].to_list() == [True, False, None]
    assert out["judge_status"].to_list() == ["ok", "ok", "malformed"]
    assert tokens == [10, 10, 10]  # ... with the official max_tokens=10
    assert "off-by-one" in seen[0] and "updated answer" in seen[1] and "unanswerable" in seen[2]
    strict = A.judge_answers(answers, qs, Recorder(), dataset="longmemeval", concurrency=1, parse="strict",
                             max_tokens=64, retries=0)
    assert strict["judge_label"].to_list() == [True, False, None] and strict["judge_status"][2] == "malformed"
    assert tokens[3:] == [64, 64, 64]
    # asked again, the third question gets the next scripted reply ("Yes.") instead of a failure
    seen.clear()
    again = A.judge_answers(answers, qs, Recorder(), dataset="longmemeval", concurrency=1)
    assert again["judge_label"].to_list() == [True, False, True] and len(seen) == 4


class _Judge:
    """Scripted judge replies, one per call, for the retry tests."""

    name = "scripted-judge"

    def __init__(self, replies):
        self.replies, self.calls = list(replies), 0

    def chat(self, messages, *, max_tokens=512, temperature=0.0):
        from vismem.serve.vlm import ChatResult

        self.calls += 1
        return ChatResult(text=self.replies[min(self.calls, len(self.replies)) - 1], latency_s=0.0)


def test_judge_failure_is_retried_and_counted_wrong_as_the_official_scripts_do():
    answers = pl.DataFrame({"variant": ["memshot"] * 2, "k": [5] * 2, "conversation_id": ["c1"] * 2,
                            "question_id": ["q1", "q2"], "prediction": ["7 May 2023", None]})
    # an empty reply, a thinking model cut off while thinking, then a verdict
    j = _Judge(["", "<think>The gold answer is 7 May, the generated", '{"label": "WRONG"}'])
    out = A.judge_answers(answers, QUESTIONS, j, dataset="locomo", concurrency=1)
    assert out["judge_label"].to_list() == [False, None] and out["judge_status"].to_list() == ["ok", "skipped"]
    assert j.calls == 3  # the unanswered question is not sent
    never = _Judge(["<think>hmm"])
    out = A.judge_answers(answers.head(1), QUESTIONS, never, dataset="locomo", concurrency=1, retries=2)
    assert never.calls == 3 and out["judge_label"][0] is None and out["judge_status"][0] == "empty"
    full = pl.concat([out, pl.DataFrame({"variant": ["memshot"], "k": [5], "conversation_id": ["c1"], "question_id": ["q1"],
                                         "prediction": ["7 May 2023"], "judge_label": [True], "judge_status": ["ok"],
                                         "judge_reason": [""], "judge_latency_s": [0.0]})], how="diagonal_relaxed")
    scored = score_answers(full.with_columns(pl.lit("7 May 2023").alias("answer"), pl.lit("2").alias("category"),
                                             pl.col("judge_label").alias("correct")), "locomo")
    row = accuracy_table(scored).filter(pl.col("category") == "overall").row(0, named=True)
    # the failure counts wrong (official reading); the judged-only reading stands beside it
    assert row["accuracy"] == 0.5 and row["accuracy_judged"] == 1.0 and row["judge_failures"] == 1


def test_headerless_shots_get_a_prompt_without_a_header():
    q = QUESTIONS.row(0, named=True)
    shots = UNITS.head(2).to_dicts()
    with_header = A.build_answer_message("locomo", q, shots, IMAGES.__getitem__)
    bare = A.build_answer_message("locomo", q, shots, IMAGES.__getitem__, header=False)
    assert "header" in with_header.text and "header" not in bare.text and "memory shots" in bare.text
    lme = A.build_answer_message("longmemeval", {**q, "question_date": "2023/05/30"}, shots, IMAGES.__getitem__,
                                 header=False)
    assert "header" not in lme.text and "shown as the images above" in lme.text
    mc = A.build_answer_message("locomo", {**q, "mc_a": "x", "mc_b": "y", "category": "adversarial", "category_code": "5"}, shots,
                                IMAGES.__getitem__, header=False)
    assert "header" not in mc.text and "Select the correct answer" in mc.text
    assert A.headerless_variants(["memshot", "no-header", "no-render", "text-rag", "custom"]) == ["no-header"]
    assert A.build_answer_message("locomo", q, UNITS.tail(1).to_dicts(), header=False).text == \
        A.build_answer_message("locomo", q, UNITS.tail(1).to_dicts()).text  # text units: unchanged


def test_generate_answers_asks_headerless_variants_without_a_header():
    seen = []

    class Recorder:
        name = "recorder"

        def chat(self, messages, *, max_tokens=512, temperature=0.0):
            from vismem.serve.vlm import ChatResult

            seen.append(messages[0].text)
            return ChatResult(text="x", latency_s=0.0)

    units = pl.concat([UNITS.head(1), UNITS.head(1).with_columns(pl.lit("no-header").alias("variant"))])
    tasks = pl.DataFrame({"variant": ["memshot", "no-header"], "k": [1, 1], "conversation_id": ["c1"] * 2,
                          "question_id": ["q1"] * 2, "unit_ids": [["m1"], ["m1"]]})
    A.generate_answers(tasks, units, QUESTIONS, Recorder(), dataset="locomo", read_image=IMAGES.__getitem__,
                       concurrency=1)
    assert "header" in seen[0] and "header" not in seen[1]
