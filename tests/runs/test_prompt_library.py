"""The prompt library: every task's comparative, scoring and reference-generation wording, the
paper's summary and dialogue prompts frozen byte for byte, task inference from the data's column
names, and aspect synonyms choosing the reference column."""

import pytest

from compassess_core.runs import absolute, scoring
from compassess_core.runs.prompts import (TASK_WORDING, TASKS, Aspect, builtin_template,
                                     canonical_aspect, custom_template, default_aspect,
                                     infer_task, reference_column, resolve_template,
                                     task_from_columns)

#: Every summary and dialogue prompt as the code wrote it before the prompt library existed:
#: the paper's reproduction numbers rest on these bytes.
FROZEN = {'absolute bws dialogue': 'Conversation:\n'
                          '{context}\n'
                          '\n'
                          'Response A: {a}\n'
                          '\n'
                          'Response B: {b}\n'
                          '\n'
                          'Compared with Response B, is Response A better, worse or similar in how '
                          '{aspect} it is? Answer with one word: Better, Worse or Similar.',
 'absolute bws summary': 'Passage:\n'
                         '{context}\n'
                         '\n'
                         'Summary A: {a}\n'
                         '\n'
                         'Summary B: {b}\n'
                         '\n'
                         'Compared with Summary B, is Summary A better, worse or similar in how '
                         '{aspect} it is? Answer with one word: Better, Worse or Similar.',
 'absolute yes-no dialogue': 'Conversation:\n'
                             '{context}\n'
                             '\n'
                             'Response A: {a}\n'
                             '\n'
                             'Response B: {b}\n'
                             '\n'
                             'Is Response A {more_aspect} than Response B? Answer Yes or No.',
 'absolute yes-no summary': 'Passage:\n'
                            '{context}\n'
                            '\n'
                            'Summary A: {a}\n'
                            '\n'
                            'Summary B: {b}\n'
                            '\n'
                            'Is Summary A {more_aspect} than Summary B? Answer Yes or No.',
 'comparative t1 dialogue': ('t1-dialogue',
                             'Conversation:\n'
                             '{context}\n'
                             '\n'
                             'Response A: {a}\n'
                             '\n'
                             'Response B: {b}\n'
                             '\n'
                             'Which Response is more {aspect} relative to the conversation, '
                             'Response A or Response B?',
                             'Answer: Response'),
 'comparative t1 summary': ('t1-summary',
                            'Passage:\n'
                            '{context}\n'
                            '\n'
                            'Summary A: {a}\n'
                            '\n'
                            'Summary B: {b}\n'
                            '\n'
                            'Which Summary is more {aspect} relative to the passage, Summary A or '
                            'Summary B?',
                            'Answer: Summary'),
 'comparative t2 dialogue': ('t2-dialogue',
                             '{context}\n'
                             '\n'
                             'Response A: {a}\n'
                             '\n'
                             'Response B: {b}\n'
                             '\n'
                             'Which Response is more {aspect}, Response A or Response B?',
                             'Answer: Response'),
 'comparative t2 summary': ('t2-summary',
                            '{context}\n'
                            '\n'
                            'Summary A: {a}\n'
                            '\n'
                            'Summary B: {b}\n'
                            '\n'
                            'Which Summary is more {aspect}, Summary A or Summary B?',
                            'Answer: Summary'),
 'generation best dialogue': 'Conversation:\n'
                             'CTX\n'
                             '\n'
                             'Write an excellent response of the conversation above: it must '
                             'deserve a score of 5 on a scale of 1 (worst) to 5 (best) for being '
                             'coherent, that is it should be as coherent as possible. Reply with '
                             'the response only.',
 'generation best summary': 'Passage:\n'
                            'CTX\n'
                            '\n'
                            'Write an excellent summary of the passage above: it must deserve a '
                            'score of 5 on a scale of 1 (worst) to 5 (best) for being coherent, '
                            'that is it should be as coherent as possible. Reply with the summary '
                            'only.',
 'generation between dialogue': 'Conversation:\n'
                                'CTX\n'
                                '\n'
                                'Response with a score of 1 on a scale of 1 (worst) to 5 (best) '
                                'for being coherent:\n'
                                'LO\n'
                                '\n'
                                'Response with a score of 5:\n'
                                'HI\n'
                                '\n'
                                'Write a new response of the conversation that deserves a score of '
                                '3: more coherent than the first response and less so than the '
                                'second. Reply with the response only.',
 'generation between summary': 'Passage:\n'
                               'CTX\n'
                               '\n'
                               'Summary with a score of 1 on a scale of 1 (worst) to 5 (best) for '
                               'being coherent:\n'
                               'LO\n'
                               '\n'
                               'Summary with a score of 5:\n'
                               'HI\n'
                               '\n'
                               'Write a new summary of the passage that deserves a score of 3: '
                               'more coherent than the first summary and less so than the second. '
                               'Reply with the summary only.',
 'generation worst dialogue': 'Conversation:\n'
                              'CTX\n'
                              '\n'
                              'Write a very poor response of the conversation above: it must '
                              'deserve a score of 1 on a scale of 1 (worst) to 5 (best) for being '
                              'coherent, that is it should be as little coherent as possible. '
                              'Reply with the response only.',
 'generation worst summary': 'Passage:\n'
                             'CTX\n'
                             '\n'
                             'Write a very poor summary of the passage above: it must deserve a '
                             'score of 1 on a scale of 1 (worst) to 5 (best) for being coherent, '
                             'that is it should be as little coherent as possible. Reply with the '
                             'summary only.',
 'scoring s1 dialogue': ('s1-dialogue',
                         'Conversation: {context}\n'
                         '\n'
                         'Response: {a}\n'
                         '\n'
                         'Score the response between 1 and 10 based on how {aspect} the response '
                         'is'),
 'scoring s1 summary': ('s1-summary',
                        'Passage: {context}\n'
                        '\n'
                        'Summary: {a}\n'
                        '\n'
                        'Score the response between 1 and 10 based on how {aspect} the summary is'),
 'scoring s2 dialogue': ('s2-dialogue',
                         '{context}\n'
                         '\n'
                         'Response: {a}\n'
                         '\n'
                         "Provide a score between 1 and 10 that measures the response's "
                         '{aspect_noun}'),
 'scoring s2 summary': ('s2-summary',
                        '{context}\n'
                        '\n'
                        'Summary: {a}\n'
                        '\n'
                        "Provide a score between 1 and 10 that measures the summary's "
                        '{aspect_noun}')}


def _now():
    out = {}
    coherence = Aspect.from_name("coherence")
    for task in ("summary", "dialogue"):
        for t in ("t1", "t2"):
            tp = builtin_template(t, task)
            out[f"comparative {t} {task}"] = (tp.name, tp.text, tp.primer)
        for s in ("s1", "s2"):
            st = scoring.scoring_template(s, coherence, task)
            out[f"scoring {s} {task}"] = (st.name, st.text)
        for v in ("bws", "yes-no"):
            out[f"absolute {v} {task}"] = absolute.comparison_template(v, task)
        out[f"generation worst {task}"] = absolute.generation_prompt("CTX", 1, 5, coherence, task)
        out[f"generation best {task}"] = absolute.generation_prompt("CTX", 5, 5, coherence, task)
        out[f"generation between {task}"] = absolute.generation_prompt(
            "CTX", 3, 5, coherence, task, lower="LO", upper="HI", lower_level=1, upper_level=5)
    return out


@pytest.mark.parametrize("key", sorted(FROZEN))
def test_paper_prompts_are_byte_identical(key):
    assert _now()[key] == FROZEN[key]


def test_every_task_has_its_wording_and_is_selectable():
    assert set(TASKS) == {"summary", "dialogue", "story", "instruction", "qa", "code", "text"}
    assert TASKS == tuple(TASK_WORDING)  # one table


@pytest.mark.parametrize("task", TASKS)
def test_every_task_renders_comparative_scoring_and_reference_prompts(task):
    w = TASK_WORDING[task]
    aspect = Aspect.from_name("fluency")
    for name in ("t1", "t2"):
        t = builtin_template(name, task)
        p = t.render("CTX", "xx", "yy", aspect)
        assert f"{w.noun} A: xx" in p.text and f"{w.noun} B: yy" in p.text
        assert "more fluent" in p.text and p.primer == f"Answer: {w.noun}"
        assert "{" not in p.text
    assert builtin_template("t1", task).render("CTX", "x", "y", aspect).text.startswith(
        f"{w.source_label}:\nCTX")
    for name in scoring.SCORING_TEMPLATES:
        st = scoring.scoring_template(name, aspect, task)
        text = st.render("CTX", "xx", aspect).text
        assert st.name == f"{name}-{task}" and "xx" in text and "CTX" in text
    for variant in absolute.VARIANTS:
        assert f"{w.noun} A: {{a}}" in absolute.comparison_template(variant, task)
    worst = absolute.generation_prompt("CTX", 1, 5, aspect, task)
    assert f"very poor {w.lower} {w.of} the {w.source} above" in worst
    between = absolute.generation_prompt("CTX", 3, 5, aspect, task, lower="LO", upper="HI",
                                         lower_level=1, upper_level=5)
    assert f"Write a new {w.lower} {w.of} the {w.source}" in between


def test_story_and_instruction_wording_read_as_their_data():
    story = builtin_template("t1", "story").render("A dragon", "x", "y",
                                                   Aspect.from_name("engagingness")).text
    assert story == ("Story prompt:\nA dragon\n\nStory A: x\n\nStory B: y\n\nWhich Story is more "
                     "engaging relative to the prompt, Story A or Story B?")
    inst = builtin_template("t1", "instruction").render("Do it", "x", "y",
                                                        Aspect.from_name("overall")).text
    assert inst.endswith("Which Response is better relative to the instruction, Response A or "
                         "Response B?")
    assert TASK_WORDING["story"].reads() == "Story prompt, then Story A and Story B"


@pytest.mark.parametrize("columns,aspect,task", [
    (("story_prompt", "story"), "engagingness", "story"),  # not dialogue: the columns say stories
    (("instruction", "response"), "overall", "instruction"),
    (("question", "answer"), "relevance", "qa"),
    (("problem", "code"), "overall", "code"),
    (("article", "summary"), "coherence", "summary"),
    (("context", "text"), "coherence", "summary"),      # the paper's rule when names say nothing
    (("dialogue", "response"), "coherence", "summary"),  # TopicalChat keeps its wording
    (("context", "text"), "naturalness", "dialogue"),
    ((), "engagingness", "dialogue"),
])
def test_task_is_inferred_from_columns_then_aspect(columns, aspect, task):
    assert infer_task(Aspect.from_name(aspect), columns) == task


def test_task_from_columns_folds_names():
    assert task_from_columns(["Story Prompt", "Story"]) == "story"
    assert task_from_columns(["context", "text"]) is None
    assert resolve_template("t1", Aspect.from_name("engagingness"), "auto",
                            ("story_prompt", "story")).name == "t1-story"


def test_custom_template_noun_follows_any_task():
    assert custom_template("Story A: {a}\nStory B: {b}").noun == "Story"
    assert custom_template("Response A: {a}\nResponse B: {b}").noun == "Response"
    assert custom_template("first {a} second {b}").noun == "Summary"


@pytest.mark.parametrize("name,preset", [("engagement", "engagingness"),
                                         ("Engagingness", "engagingness"),
                                         ("relevant", "relevance"), ("coherent", "coherence"),
                                         ("quality", "overall"), ("grammaticality", "grammar"),
                                         ("groundedness", None)])
def test_aspect_synonyms(name, preset):
    assert canonical_aspect(name) == preset


def test_reference_column_defaults_to_the_synonym_column():
    assert reference_column("engagingness", ["relevance", "engagement"]) == "engagement"
    assert reference_column("overall", ["quality"]) == "quality"
    assert reference_column("coherence", ["Coherence", "coherent"]) == "Coherence"
    assert reference_column("coherence", ["coherence", "coherent"]) == "coherence"
    assert reference_column("engagingness", ["relevance"]) is None  # never another aspect
    assert reference_column("faithful to the source", ["relevance"]) is None


def test_default_aspect_from_score_columns():
    assert default_aspect(["engagement"]) == "engagingness"
    assert default_aspect(["quality"]) == "overall"
    assert default_aspect(["groundedness"]) == "coherence"


# ---------------------------------------------------------------- the task in the run's settings

STORY_CSV = (b"prompt_id,story_prompt,model,story,engagement\n"
             b"p1,A dragon.,m1,It flew.,2\np1,A dragon.,m2,Ash sneezed fire.,4\n"
             b"p2,A lighthouse.,m1,Mara lit it.,5\np2,A lighthouse.,m2,The light was on.,1\n")


def _story_dataset():
    from compassess_core.data.candidates import load_candidates, read_table, suggest_column_map
    table = read_table(STORY_CSV, file_label="stories.csv")
    return load_candidates(STORY_CSV, name="stories", file_label="stories.csv",
                           column_map=suggest_column_map(list(table.columns), table))


def test_dataset_keeps_its_text_column_names_in_the_store(store):
    dataset = _story_dataset()
    assert dataset.text_columns == ("story_prompt", "story")
    assert store.load_dataset(store.save_dataset(dataset)).text_columns == ("story_prompt", "story")


def test_settings_store_the_task_the_columns_name_unless_one_is_chosen():
    from compassess_core.runs.options import ComparativeOptions, ModelOptions, ScoringOptions
    from compassess_core.runs.run_kinds import build_settings
    model = ModelOptions(model="bundled:SmolLM2-135M-Instruct")
    columns = _story_dataset().text_columns
    auto = build_settings("stories", ComparativeOptions("engagingness", strategy="full"), model,
                          text_columns=columns)
    assert auto.template_name == "t1-story" and "Story A:" in auto.template_text
    chosen = build_settings("stories", ComparativeOptions("engagingness", task="dialogue",
                                                          strategy="full"), model,
                            text_columns=columns)
    assert chosen.template_name == "t1-dialogue"
    # a dataset stored before its column names were kept: worded from the aspect, as always
    old = build_settings("old", ComparativeOptions("engagingness", strategy="full"), model)
    assert old.template_name == "t1-dialogue"
    scored = build_settings("stories", ScoringOptions("engagingness", task="qa"), model)
    assert scored.template_name == "s1-qa" and "question" in scored.template_text.lower()


def test_cli_offers_every_task():
    from compassess_core.cli import build_parser
    for task in TASKS:
        args = build_parser().parse_args(["run", "data.csv", "--aspect", "fluency", "--task", task])
        assert args.task == task


def test_python_api_words_a_dataset_by_its_columns_and_takes_every_task():
    from compassess_core import api
    dataset = _story_dataset()
    assert api.run_settings(dataset, aspect="engagingness").template_name == "t1-story"
    assert api.run_settings("stories", aspect="engagingness").template_name == "t1-dialogue"
    assert api.run_settings("x", aspect="overall", task="code").template_name == "t1-code"
    absolute_settings = api.score_settings(dataset, aspect="engagingness")
    assert absolute_settings.references.task == "story"
    assert "Story A" in absolute_settings.template_text
