"""Templates T1/T2, aspect adjectives and template validation (Liusie et al. 2024, Figure 2)."""

import pytest

from compassess_core.errors import TemplateError
from compassess_core.runs.prompts import (Aspect, builtin_template, custom_template, prompt_hash,
                                     resolve_template, validate_template_text)


def test_t1_summary_wording_matches_paper():
    t = builtin_template("t1", "summary")
    p = t.render("CTX", "aaa", "bbb", Aspect.from_name("coherence"))
    assert p.text == ("Passage:\nCTX\n\nSummary A: aaa\n\nSummary B: bbb\n\n"
                      "Which Summary is more coherent relative to the passage, Summary A or Summary B?")
    assert p.primer == "Answer: Summary"


def test_t1_dialogue_wording_matches_product_reference_prompt():
    t = builtin_template("t1", "dialogue")
    p = t.render("CTX", "x", "y", Aspect.from_name("engagingness"))
    assert p.text == ("Conversation:\nCTX\n\nResponse A: x\n\nResponse B: y\n\nWhich Response is more "
                      "engaging relative to the conversation, Response A or Response B?")
    assert p.primer == "Answer: Response"


def test_t2_and_overall_reads_better():
    t = builtin_template("t2", "summary")
    p = t.render("CTX", "x", "y", Aspect.from_name("overall"))
    assert p.text.endswith("Which Summary is better, Summary A or Summary B?")
    assert p.text.startswith("CTX\n\nSummary A: x")


@pytest.mark.parametrize("name,adj", [("coherence", "coherent"), ("consistency", "consistent"),
                                      ("fluency", "fluent"), ("relevance", "relevant"),
                                      ("naturalness", "natural"), ("engagingness", "engaging"),
                                      ("grammar", "grammatically correct"),
                                      ("continuity", "good a continuation")])
def test_aspect_adjectives(name, adj):
    assert Aspect.from_name(name).adjective == adj


def test_custom_aspect_is_used_verbatim():
    a = Aspect.from_name("faithful to the source")
    assert (a.name, a.adjective) == ("faithful to the source", "faithful to the source")


def test_dialogue_aspect_selects_response_wording():
    t = resolve_template("t1", Aspect.from_name("naturalness"))
    assert t.noun == "Response"
    assert resolve_template("t1", Aspect.from_name("coherence")).noun == "Summary"


@pytest.mark.parametrize("text,fragment", [
    ("{a} vs {b} {bogus}", "unknown placeholder {bogus}"),
    ("only {a}", "missing placeholder(s) {b}"),
    ("{a} {b} {", "Single '{'"),
    ("{a:>10} {b}", "format spec"),
    ("{} {a} {b}", "unknown placeholder {}"),
])
def test_bad_templates_are_rejected_with_reason(text, fragment):
    with pytest.raises(TemplateError, match=None) as e:
        validate_template_text(text)
    assert fragment in str(e.value)


def test_custom_template_with_literal_braces_and_braces_in_texts():
    t = custom_template("Ctx {{json}}: {context}\nA: {a}\nB: {b}\nMore {aspect}?")
    p = t.render("c", "{x}", "{y}", Aspect.from_name("fluency"))
    assert p.text == "Ctx {json}: c\nA: {x}\nB: {y}\nMore fluent?"


def test_template_file(tmp_path):
    f = tmp_path / "mine.txt"
    f.write_text("Which is more {aspect}?\nResponse A: {a}\nResponse B: {b}\n", encoding="utf-8")
    t = resolve_template(str(f), Aspect.from_name("fluency"))
    assert t.noun == "Response" and t.name == "mine.txt"
    with pytest.raises(TemplateError, match="neither t1, t2 nor an existing file"):
        resolve_template(str(tmp_path / "missing.txt"), Aspect.from_name("fluency"))


def test_prompt_hash_depends_on_text_and_primer():
    t = builtin_template("t1")
    asp = Aspect.from_name("coherence")
    h1 = prompt_hash(t.render("c", "a", "b", asp))
    assert h1 == prompt_hash(t.render("c", "a", "b", asp))
    assert h1 != prompt_hash(t.render("c", "b", "a", asp))
