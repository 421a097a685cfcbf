"""Run: configure a comparison run, start it in a worker process, watch it, cancel it, resume it.

Three modes: pairwise comparisons, absolute scores (synthetic references) and prompt scoring (the
paper's §4.3.2 baseline: each candidate scored 1..10 alone with template s1 or s2; argmax and G-Eval
expected scores are stored). All are started, watched, cancelled and resumed the same way.

The run executes outside this script (``compassess worker``), writing comparisons, status and a
heartbeat to the store; this page only creates the run, starts the worker and polls the store, so a
refresh, another page or a second browser sees the same run. A served judge is chosen among the
servers configured for the app (``judges.servers``: each with the API key bound to it); no other
URL can be entered. It must never run the judge itself, never start a second worker for a run
whose worker is alive, and shows names, server and error messages only through ``plain``.
"""

from __future__ import annotations

import os

import streamlit as st

from compassess_core.errors import CompAssessError, InputError, TemplateError
from compassess_core.judges.servers import (configured_servers, model_name_problem,
                                            normalise_base_url)
from compassess_core.limits import MAX_ASPECT_CHARS, MAX_NAME_CHARS, name_problem
from compassess_core.prompts import (ASPECT_ADJECTIVES, TASK_WORDING, TASKS, Aspect,
                                     builtin_template, custom_template, default_aspect, infer_task,
                                     reference_column, task_from_columns)
from compassess_core.models import BUNDLED_MODEL
from compassess_core.options import (AbsoluteOptions, ComparativeOptions, ModelOptions,
                                     ScoringOptions, for_aspects)
from compassess_core.run_kinds import build_settings, kind_of
from compassess_core.run_loop import STALE_AFTER_S, WORKER_STATE_TEXT
from compassess_core.selection import STRATEGIES, max_budget
from compassess_core.settings import GenerationOptions, RunSettings
from pages import _view as view
from pages._auth import guard, require
from pages._common import (api_store, cached_dataset, check_app_model, is_active, list_runs,
                           log_tail, pick_dataset, plain, state_text, worker_state)
from pages._judges import catalog_expander, local_model_picker
from pages._run_progress import (group_states, log_of, progress_text, resumable,
                                 start_together, together_with)

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

OWN = "own description ..."
#: The form's widgets, kept across page switches (``_view.keep_form``): a visit to another page
#: and back finds the choices as they were.
FORM = "run"
FORM_KEYS = ("run_aspect", "run_more_aspects", "own_aspect", "template_choice", "run_task",
             "own_template", "run_model_kind", "served_url", "served_name", "served_endpoint",
             "model_text", "catalog_model", "run_device", "run_batch_size", "strategy", "budget",
             "n_contexts", "run_seed", "truncate_context", "run_mode", "abs_levels",
             "abs_max_new", "abs_orders", "abs_sample", "abs_variant", "abs_refs",
             "score_template")
#: The run this page watches when chosen here or started by Start (the result pages' run picker
#: changes the view's run, not this one); unset, the page watches the live run.
WATCH = "run_watch"
#: The icon of each results page a run kind names (``RunKind.results_page``).
RESULTS_ICONS = {"rankings": ":material/leaderboard:", "scores": ":material/speed:"}

st.title("Run the judge")
view.keep_form(FORM, FORM_KEYS)

info = pick_dataset(st, "Dataset")
if info is None:
    st.info("The store has no dataset yet: load the sample on **Home** or upload a file on **Upload**.")
    st.page_link("pages/home.py", label="Go to Home", icon=":material/home:")
    st.stop()
dataset = cached_dataset(info.id)
# Start, the plan and the watched run's status come first, drawn once the settings below are
# known: a long context in the preview must not push them out of sight.
top = st.container()

with st.container(border=True):
    st.markdown("**What to judge**")
    c1, c2, c3 = st.columns(3)
    presets = list(ASPECT_ADJECTIVES)
    # The aspect the data's scores are about, by name or synonym (an 'engagement' column).
    st.session_state.setdefault("run_aspect", default_aspect(dataset.score_columns))
    choice = c1.selectbox("Aspect", presets + [OWN], key="run_aspect",
                          help="A preset becomes its adjective in the prompt (coherence -> coherent).")
    own_aspect = (c1.text_input("Your aspect description", placeholder="e.g. factually accurate",
                                key="own_aspect", max_chars=MAX_ASPECT_CHARS)
                  if choice == OWN else "")
    try:
        aspect = Aspect.from_name(own_aspect if choice == OWN else choice)
    except TemplateError as e:
        st.error(plain(str(e)))
        st.stop()
    # More aspects judged in the same pass: one run each, one worker (run_progress).
    more_aspects = [a for a in c1.multiselect(
        "Also judge in the same pass", [p for p in presets if p != aspect.name],
        key="run_more_aspects",
        help="One run per aspect, judged together by one worker: the prompts of the same pair "
             "share the context and both candidates, so each more aspect costs a fraction of a "
             "run. Each run is stored, resumed and shown on its own.") if a != aspect.name]
    template_choice = c2.radio("Template", ("T1", "T2", "own"), horizontal=True, key="template_choice",
                               help="T1 and T2 are the paper's (Figure 2); 'own' takes your text with "
                                    "{context} {a} {b} {aspect} placeholders.")
    task = c3.selectbox("Wording", ("auto",) + TASKS, key="run_task",
                        format_func=lambda t: t if t == "auto" else
                        f"{t}: {TASK_WORDING[t].noun} A/B, {TASK_WORDING[t].source}",
                        help="How the judge is told what it reads (T1/T2, S1/S2 and the absolute "
                             "kind's prompts alike). auto: the task the file's column names say "
                             "(story, instruction, question, code), else dialogue for dialogue "
                             "aspects and summary otherwise.")
    resolved_task = infer_task(aspect, dataset.text_columns) if task == "auto" else task
    st.session_state.setdefault("own_template", builtin_template("t1", resolved_task).text)
    own_text = (st.text_area("Your template ({context} {a} {b} {aspect}; literal braces doubled)",
                             height=150, key="own_template")
                if template_choice == "own" else "")
    try:
        template = (custom_template(own_text) if template_choice == "own"
                    else builtin_template(template_choice.lower(), resolved_task))
    except TemplateError as e:
        st.error(f"Template problem: {plain(str(e))}")
        st.stop()
    first = dataset.contexts[0]
    prompt = template.render(first.text, first.candidates[0].text, first.candidates[1].text, aspect)
    with st.expander(f"Live preview: the prompt of {plain(first.context_id)}, "
                     f"{plain(first.candidates[0].candidate_id)} vs "
                     f"{plain(first.candidates[1].candidate_id)}",
                     expanded=False):
        st.code(prompt.text, language=None, wrap_lines=True)
        st.caption(f"Answer primer the model continues: {plain(repr(prompt.primer))} -> next token "
                   "' A' or ' B'")

with st.container(border=True):
    st.markdown("**Judge and comparisons**")
    c1, c2, c3 = st.columns(3)
    # COMPASSESS_JUDGE_MODEL (e.g. set by docker-compose to a vLLM server) pre-selects a judge.
    default_model = os.environ.get("COMPASSESS_JUDGE_MODEL", "")
    kinds = ("bundled default", "local path or .gguf", "hub id", "served (OpenAI-compatible API)",
             "models folder")
    default_kind = 3 if default_model.startswith(("openai:", "openai-completions:")) else (1 if default_model else 0)
    st.session_state.setdefault("run_model_kind", kinds[default_kind])
    model_kind = c1.radio("Model", kinds, key="run_model_kind",
                          help="Bundled: SmolLM2-135M-Instruct (GGUF), works offline after `make setup`. "
                               "Served: one of the vLLM / TGI / Ollama / OpenAI servers configured "
                               "where the app runs (COMPASSESS_OPENAI_BASE_URL with its "
                               "COMPASSESS_OPENAI_API_KEY); no other server can be entered here.")
    if model_kind == "bundled default":
        model_text = ""
    elif model_kind == "models folder":
        model_text = local_model_picker(c1)
    elif model_kind.startswith("served"):
        model_text = ""
        try:
            servers = configured_servers()
        except InputError as e:
            servers = []
            c1.error(plain(str(e)))
        if not servers:
            c1.warning("No judge server is configured for this app. Whoever runs it sets "
                       "COMPASSESS_OPENAI_BASE_URL (and COMPASSESS_OPENAI_API_KEY when the server "
                       "needs a key) in its environment; see docs/deploy.md.",
                       icon=":material/dns:")
        else:
            bases = [sv.base_url for sv in servers]
            default_base = ""
            if default_kind == 3:  # COMPASSESS_JUDGE_MODEL names a served model
                try:
                    default_base = normalise_base_url(default_model.split(":", 1)[1].split("#")[0])
                except InputError:
                    pass
            if st.session_state.get("served_url") not in bases:
                st.session_state["served_url"] = default_base if default_base in bases else bases[0]
            served_url = c1.selectbox(
                "Server (configured for this app)", bases, key="served_url",
                format_func=lambda b: plain(b, "text") + (" (API key bound to it)" if next(
                    sv for sv in servers if sv.base_url == b).has_key else ""))
            st.session_state.setdefault("served_name", default_model.split("#", 1)[1].split("?")[0]
                                        if default_kind == 3 and "#" in default_model else "")
            served_name = c1.text_input("Model name on the server", key="served_name",
                                        max_chars=200).strip()
            endpoint = c1.radio("Endpoint", ("chat", "completions (exact primer, needs logprobs)"),
                                key="served_endpoint", horizontal=True)
            prefix = "openai:" if endpoint == "chat" else "openai-completions:"
            problem = model_name_problem(served_name) if served_name else None
            if problem:
                c1.error(plain(problem))
            elif served_name:
                model_text = f"{prefix}{served_url}#{served_name}"
    else:
        st.session_state.setdefault("model_text", default_model if default_kind == 1 else "")
        model_text = c1.text_input("Model path or hub id", key="model_text",
                                   placeholder="/models/qwen.gguf or Qwen/Qwen2.5-0.5B-Instruct")
    device = c2.selectbox("Device", ("auto", "cpu", "cuda", "mps"), key="run_device")
    st.session_state.setdefault("run_batch_size", RunSettings.batch_size)
    batch_size = c2.number_input("Batch size (prompts per forward pass; requests in flight for a served judge)",
                                 1, 256, key="run_batch_size")
    strategy = c3.selectbox("Selection strategy", STRATEGIES, key="strategy",
                            help="full: all N(N-1) ordered pairs; random / no-repeat / symmetric "
                                 "(paper §3.4): a budget of R comparisons per context; poe: the pairs "
                                 "that most reduce the product-of-experts score variance; adaptive: "
                                 "chosen from the outcomes so far (both beyond the paper).")
    smallest = min(len(c.candidates) for c in dataset.contexts)
    st.session_state.setdefault("budget", max(1, min(10, max_budget(smallest, "no-repeat"))))
    budget = c3.number_input("Budget R (comparisons per context)", 1, 100_000,
                             disabled=strategy == "full", key="budget")
    # A kept count above this dataset's contexts (another dataset picked since) becomes all of them.
    if st.session_state.get("n_contexts", 0) > len(dataset.contexts) or "n_contexts" not in st.session_state:
        st.session_state["n_contexts"] = len(dataset.contexts)
    n_ctx = c3.number_input(f"Contexts to judge (first N of {len(dataset.contexts)})", 1,
                            len(dataset.contexts), key="n_contexts")
    st.session_state.setdefault("run_seed", RunSettings.seed)
    seed = c2.number_input("Seed (pair sampling)", 0, 2**31 - 1, key="run_seed")
    truncate = c2.checkbox("Truncate long contexts", key="truncate_context",
                           help="A prompt longer than the model's context window is refused when "
                                "the run is planned (the message names the context, the candidates "
                                "and the token count). Tick this to cut the context passage instead, "
                                "just enough to fit; the run records which contexts were cut and the "
                                "comparison view shows it.")

catalog_expander()
model = BUNDLED_MODEL if model_kind == "bundled default" else model_text.strip()
# The widgets fill the options objects the CLI's flags fill; the run's kind builds the settings.
model_options = ModelOptions(
    model=model, device=device, batch_size=int(batch_size), truncate_context=bool(truncate),
    contexts=None if n_ctx == len(dataset.contexts) else int(n_ctx)) if model else None
make_options = lambda: ComparativeOptions(  # noqa: E731 - made where its errors are shown
    aspect=aspect, template=template, task=task, strategy=strategy, budget=int(budget),
    seed=int(seed))
# ---- absolute scores (candidates compared with synthetic references of quality 1..N)
SCORING_MODE = "prompt scoring (baseline)"
mode = st.radio("Mode", ("pairwise comparisons", "absolute scores", SCORING_MODE), horizontal=True,
                key="run_mode",
                help="absolute scores: every candidate is compared with N references of known quality "
                     "(written by the model, or your anchors) and gets a score you can threshold; "
                     "see the Scores page. Template and selection strategy do not apply.\n\n"
                     "prompt scoring (baseline): the model scores each candidate alone, 1 to 10, "
                     "with the paper's template s1 or s2 (§4.3.2); the argmax and the G-Eval "
                     "expected score are stored and ranked on the Rankings page. Template T1/T2, "
                     "selection strategy, budget and seed do not apply.")
if mode == "absolute scores":
    from compassess_core import absolute as ab
    with st.container(border=True):
        st.markdown("**Absolute scores (synthetic references)**")
        a1, a2, a3 = st.columns(3)
        st.session_state.setdefault("abs_levels", ab.DEFAULT_LEVELS)
        st.session_state.setdefault("abs_max_new", GenerationOptions.max_new_tokens)
        n_levels = a1.number_input("Reference levels N", 2, 20, key="abs_levels")
        max_new = a1.number_input("Max new tokens per reference", 8, 1024, key="abs_max_new")
        orders = a2.selectbox("Orders", list(ab.ORDERS), key="abs_orders",
                              help="both: each comparison in both orders, averaged (removes positional bias)")
        sample = a2.checkbox("Sample references (greedy otherwise; seeded)", key="abs_sample")
        variant = a3.selectbox("Label words", list(ab.VARIANTS), key="abs_variant",
                               format_func=lambda v: {"bws": "Better / Worse / Similar",
                                                      "yes-no": "Yes / No (ablation)"}[v])
        ref_source = a3.radio("References", ("generated", ab.UPLOADED), key="abs_refs",
                              format_func=lambda r: {"generated": "written by the model",
                                                     ab.UPLOADED: "my anchors (upload on Scores)"}[r])
    make_options = lambda: AbsoluteOptions(  # noqa: E731
        aspect=aspect, n_levels=int(n_levels), reference_set=ref_source,
        task=task if task in ab.TASKS else "auto", variant=variant, orders=orders,
        generation=GenerationOptions(max_new_tokens=int(max_new), sample=bool(sample)),
        seed=int(seed))
if mode == SCORING_MODE:
    from compassess_core import scoring as sc
    from compassess_core.judges.openai_judge import is_openai_spec
    make_options = None
    with st.container(border=True):
        st.markdown("**Prompt scoring (paper §4.3.2 baseline)**")
        s1, s2 = st.columns([1, 3])
        score_name = s1.radio("Scoring template", sc.SCORING_TEMPLATES, horizontal=True,
                              key="score_template",
                              help="The paper's Figure 3 templates: s1 'Score the response between 1 "
                                   "and 10 based on how {adjective} ...', s2 'Provide a score between "
                                   "1 and 10 that measures ...'. The Wording choice above applies.")
        try:
            score_template = sc.scoring_template(score_name, aspect, resolved_task)
        except TemplateError as e:
            st.error(f"Template problem: {plain(str(e))}")
            score_template = None
        if score_template is not None:
            s2.caption(f"Template {score_template.name} ({{context}} {{a}} {{aspect}} {{aspect_noun}} "
                       "placeholders):")
            s2.code(score_template.text, language=None, wrap_lines=True)
            cand = first.candidates[0]
            scored_prompt = score_template.render(first.text, cand.text, aspect)
            with st.expander(f"Live preview: the prompt of {plain(first.context_id)}, candidate "
                             f"{plain(cand.candidate_id)}", expanded=False):
                st.code(scored_prompt.text, language=None, wrap_lines=True)
                st.caption("Answer primer the model continues: "
                           f"{plain(repr(scored_prompt.primer))} -> next token(s): the score 1..10")
        st.caption("Each candidate is scored once: the argmax score (prompt scoring) and the "
                   "expected score sum_s s P(s) over 1..10 (G-Eval) are both stored. Model, device, "
                   "batch size and 'Contexts to judge' above apply; template T1/T2, selection "
                   "strategy, budget and seed do not.")
    if model and is_openai_spec(model):
        st.error("Prompt scoring reads the probabilities of the score tokens from a local model: "
                 "choose the bundled model, a local path or .gguf file, or a hub id (a served model "
                 "cannot be used here).")
    elif score_template is not None:
        make_options = lambda: ScoringOptions(aspect=aspect, template=score_name, task=task)  # noqa: E731
view.save_form(FORM, FORM_KEYS)
settings = planned = None
together: list = []  # the settings of every aspect judged in this pass (the first: `settings`)
try:
    if model_options is not None and make_options is not None:
        together = [build_settings(dataset.name, o, model_options,
                                   text_columns=dataset.text_columns)
                    for o in for_aspects(make_options(), [aspect, *more_aspects])]
        settings = together[0]
        planned = kind_of(settings).planned_total(dataset, settings)
except CompAssessError as e:  # e.g. an odd budget for 'symmetric': say so before Start
    top.error(f"These settings cannot run: {plain(str(e))}")
    settings = planned = None
if settings is not None:
    kind = kind_of(settings)
    n_judged = settings.contexts or len(dataset.contexts)
    took = api_store().estimate_time(dataset, together).sentence()
    each = (f" for each of {len(together)} aspects ({plain(', '.join(s.aspect for s in together))}"
            "), one run each, judged in one pass" if len(together) > 1 else "")
    top.info(f"**Plan: {planned:,} {kind.unit}**{each} on {n_judged} context(s); {took}. What is "
             "already stored (a resumed run, or the same prompts judged before by this model) is "
             "not recomputed.", icon=":material/schedule:")
    wording = TASK_WORDING[resolved_task]
    why = ("you chose it" if task != "auto" else
           f"the file's columns {', '.join(dataset.text_columns)}"
           if task_from_columns(dataset.text_columns) else f"the aspect {aspect.name}")
    shown = (f"{wording.source_label}, then one {wording.lower} at a time" if mode == SCORING_MODE
             else wording.reads())
    reads = ("your own template" if mode == "pairwise comparisons" and template_choice == "own"
             else f"{shown} (task {resolved_task}, from {why})")
    reference = reference_column(aspect.name, dataset.score_columns)
    against = (f"the reference column {reference}" if reference is not None else
               "none: no reference column is named for this aspect or a synonym of it (the "
               "result pages start at the first one; choose the right one there)")
    top.caption(plain(f"The judge will read: {reads}. Human scores it is checked against by "
                      f"default: {against}."))
    for line in kind.advice(dataset, settings):  # what the CLI prints as warnings
        top.warning(plain(line))
run_name = top.text_input("Run name",
                          value=settings.default_run_name()[:MAX_NAME_CHARS] if settings else "",
                          max_chars=MAX_NAME_CHARS,
                          help="Starting a run with an existing name and the same settings resumes "
                               "it. Several aspects: NAME-ASPECT each.")
bad_name = name_problem(run_name.strip(), "run name")
if settings is not None and bad_name:
    top.error(plain(bad_name))
if top.button("Start", type="primary", icon=":material/play_arrow:",
              disabled=settings is None or bad_name is not None):
    require()  # the person holds the role now (pages/_auth.py)
    try:
        check_app_model(settings.model)  # before the run is stored or a request is made
        runs_now = (api_store().create_runs(info.id, together, name=run_name.strip())
                    if len(together) > 1 else
                    [api_store().create_run(info.id, settings, name=run_name.strip())])
        to_start = []
        for run in runs_now:
            state = worker_state(run.info)
            if is_active(state):
                top.warning(f"Run {plain(run.name)} already has a live worker; watching it below.")
            elif state == "completed" and run.info.total and run.info.done >= run.info.total:
                top.info(f"Run {plain(run.name)} is already complete ({run.info.done}/"
                         f"{run.info.total}); nothing to do.")
            else:
                to_start.append(run)
        if to_start:
            start_together(to_start)
            st.toast(f"Started run {plain(', '.join(r.name for r in to_start))}")
        st.session_state[WATCH] = runs_now[0].name
        view.put("run", runs_now[0].name)
    except CompAssessError as e:
        top.error(plain(str(e)))

top.divider()
top.subheader("Runs")
runs = list_runs()
if not runs:
    top.info("No run yet: configure one below and press Start.")
    st.stop()
names = [r.name for r in runs]
live = [r.name for r in runs if is_active(worker_state(r.info))]
# The run chosen here or just started in this session; else the live one; else the one the
# link names; else the newest.
watch = st.session_state.get(WATCH)
if watch not in names:
    watch = live[-1] if live else (view.get("run") if view.get("run") in names else names[-1])
st.session_state["watch_w"] = watch
# Each run's label with its state as this render found it: a label computed again later (a
# heartbeat now older than STALE_AFTER_S) would no longer match the option drawn.
labels = {r.name: f"{plain(r.name, 'text')} [{state_text(r.info)}]" for r in runs}
watched = top.selectbox("Watch run", names, key="watch_w",
                        on_change=lambda: st.session_state.__setitem__(WATCH,
                                                                       st.session_state["watch_w"]),
                        format_func=lambda n: labels.get(n, plain(n, "text")))
view.put("run", watched)

#: Why a run is in each worker state (the state's own words are ``WORKER_STATE_TEXT``'s).
STATE_HELP = {
    "working": "The worker is computing; results are stored after every batch.",
    "cancelling": "Cancel requested: the worker stops after the batch it is computing and keeps "
                  "everything computed.",
    "stale": f"No heartbeat for over {STALE_AFTER_S:.0f} s: the worker died or the machine slept. "
             "Resume starts a new worker; nothing stored is recomputed.",
    "completed": "Everything planned is stored.",
    "cancelled": "Stopped on request; Resume continues where it stopped.",
    "failed": "The worker failed; see the message and the log. Resume retries.",
    "pending": "The run exists but no worker is running it.",
}


def progress_panel(name: str, was_active: bool) -> None:
    run = api_store().get_run(name)
    # Status and progress are drawn after the buttons (into these slots above them), so a Cancel
    # click shows "cancelling…" in the same rerun.
    status_slot, progress_slot, message_slot = st.empty(), st.empty(), st.empty()
    group = together_with(run)  # the runs judged in one pass with it (several aspects)
    state = run.state
    states = group_states(group)
    c1, c2, c3 = st.columns([1, 1, 3])
    if any(is_active(s) for s in states):
        if "working" in states and c1.button("Cancel", icon=":material/stop:",
                                             key=f"cancel_{run.id}"):
            require()  # the person holds the role now (pages/_auth.py)
            for r, s in zip(group, states):  # one worker judges them all: all stop
                if is_active(s):
                    r.cancel()
            state = run.refresh().state
    elif any(resumable(r, s) for r, s in zip(group, states)):
        if c1.button("Resume", icon=":material/replay:", type="primary", key=f"resume_{run.id}"):
            require()  # the person holds the role now (pages/_auth.py)
            fresh = [r.refresh() for r in group]
            if any(is_active(r.state) for r in fresh):
                st.warning("A worker is already running this run.")
            else:
                try:
                    start_together([r for r in fresh if resumable(r, r.state)])
                    st.rerun()
                except CompAssessError as e:
                    st.error(plain(str(e)))
    info = run.info
    title, explain = WORKER_STATE_TEXT.get(state, state), STATE_HELP.get(state, "")
    total, done = int(info.total or 0), int(info.done or 0)
    status_slot.markdown(f"**Status: {title}** — {explain}")
    named = (plain(f"{run.name} ({run.settings.aspect}): ", "text") if len(group) > 1 else "")
    progress_slot.progress(min(done / total, 1.0) if total else 0.0,
                           text=named + progress_text(run, state))
    if len(group) > 1:
        st.caption(f"Judged in one pass with {len(group) - 1} other run(s), one per aspect; "
                   "Cancel and Resume act on all of them.")
        for other, other_state in ((g, s) for g, s in zip(group, states) if g.id != run.id):
            o_total = int(other.info.total or 0)
            st.progress(min(int(other.info.done or 0) / o_total, 1.0) if o_total else 0.0,
                        text=plain(f"{other.name} ({other.settings.aspect}): ", "text")
                        + progress_text(other, other_state))
    if info.message:  # the worker's, a server's or an error's words: plain text
        message_slot.caption(f"Message: {plain(info.message)}")
    if done:
        results = run.run_kind.results_page   # the kind says where its results are shown
        c2.page_link(f"pages/{results}.py", label=f"See {results}",
                     icon=RESULTS_ICONS.get(results, ":material/leaderboard:"))
        if done <= 20_000 and run.kind == "scoring":
            latest = run.comparisons().tail(8).iloc[::-1]
            columns = [c for c in ("context_id", "candidate_id", "score_expected", "score_argmax",
                                   "label_mass") if c in latest.columns]
            st.caption("Latest scored candidates (expected score = G-Eval, 1–10, from the model's "
                       "distribution over the score tokens; argmax score = the most probable score; "
                       "label mass = probability on the scores 1–10)")
            st.dataframe(plain(latest[columns], into="text"), hide_index=True, width="stretch", placeholder="")
        elif done <= 20_000 and run.run_kind.is_pairwise:
            frame = run.comparisons().tail(8).iloc[::-1]
            st.caption("Latest stored comparisons (p = P(first wins), label mass = P(w_A) + P(w_B))")
            st.dataframe(plain(frame[["context_id", "a_id", "b_id", "p", "label_mass", "latency_ms"]],
                               into="text"),
                         hide_index=True, width="stretch", placeholder="")
    with st.expander("Worker log (last lines)"):
        st.code(log_tail(log_of(group)) or "(no log yet)", language=None)
    if was_active and not any(is_active(s) for s in group_states([r.refresh() for r in group])):
        st.rerun()  # the whole page: stop polling, refresh the run list


active = any(is_active(s) for s in group_states(
    together_with(api_store().get_run(runs[names.index(watched)].id))))
with top:
    st.fragment(progress_panel, run_every=1.0 if active else None)(watched, active)
    st.divider()
