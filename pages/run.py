"""Run: configure a comparison run, start it in a worker process, watch it, cancel it, resume it.

Three modes: pairwise comparisons, absolute scores (synthetic references) and prompt scoring (the
paper's §4.3.2 baseline: each candidate scored 1..10 alone with template s1 or s2; argmax and G-Eval
expected scores are stored). All are started, watched, cancelled and resumed the same way.

The run executes outside this script (``compassess worker``), writing comparisons, status and a
heartbeat to the store; this page only plans the run (``api.Store.plan_run``: settings, size,
time, wording, advice, the judge allowlist), creates it, starts its worker (``api.Store.
job("run", ...).start()``) and polls the store (``api.Run.progress``), so a refresh, another page or a second
browser sees the same run. The form belongs to the dataset on screen: every widget is keyed by the
dataset's id, so another dataset shows its own values and defaults (``api.Store.run_defaults``),
and a dataset's values come back with it. The watched run is known by its id, and Cancel and
Resume act on the run shown (``expect_name``: a run renamed or deleted meanwhile is refused with
a message). A served judge is chosen among the servers configured for the app
(``api.judge_servers``: each with the API key bound to it); no other URL can be entered. It must
never run the judge itself, never start a second worker for a run whose worker is alive, and
shows names, server and error messages only through ``plain``.
"""

from __future__ import annotations

import streamlit as st

from compassess_core import api
from compassess_core.runs.absolute import (DEFAULT_LEVELS, ORDERS, TASKS as ABSOLUTE_TASKS,
                                           UPLOADED, VARIANTS)
from compassess_core.errors import CompAssessError, InputError, ObjectChanged
from compassess_core.limits import MAX_ASPECT_CHARS, MAX_NAME_CHARS
from compassess_core.judges.models import BUNDLED_MODEL
from compassess_core.runs.options import (AbsoluteOptions, ComparativeOptions, ModelOptions,
                                     ScoringOptions)
from compassess_core.runs.prompts import ASPECT_ADJECTIVES, TASK_WORDING, TASKS
from compassess_core.runs.run_loop import STALE_AFTER_S
from compassess_core.runs.scoring import SCORING_TEMPLATES
from compassess_core.runs.selection import STRATEGIES
from compassess_core.runs.settings import GenerationOptions, RunSettings
from pages import _view as view
from pages._auth import guard, recheck, require
from pages._common import api_store, cached_dataset, list_runs, pick_dataset, pick_id, plain
from pages._plain import plain_message, plain_within
from pages._judges import catalog_expander, local_model_picker

guard(__file__)  # signed in, with a role that may open this page (pages/_auth.py)

OWN = "own description ..."
#: The form's widgets; each is keyed by the dataset on screen (``form_key``) and kept across
#: page switches per dataset (``_view.keep_form``): a visit to another page or dataset and back
#: finds the choices as they were.
FORM_KEYS = ("run_aspect", "run_more_aspects", "own_aspect", "template_choice", "run_task", "own_template",
             "run_model_kind", "served_url", "served_name", "served_endpoint", "model_text",
             "catalog_model", "run_device", "run_batch_size", "strategy", "budget", "n_contexts",
             "run_seed", "truncate_context", "run_mode", "abs_levels", "abs_max_new", "abs_orders",
             "abs_sample", "abs_variant", "abs_refs", "score_template", "saved_template")
#: The id of the run this page watches when chosen here or started by Start (the result pages'
#: run picker changes the view's run, not this one); unset, the page watches the live run.
WATCH = "run_watch"
#: The icon of each results page a run kind names (``RunKind.results_page``).
RESULTS_ICONS = {"rankings": ":material/leaderboard:", "scores": ":material/speed:"}
MODEL_KINDS = ("bundled default", "local path or .gguf", "hub id",
               "served (OpenAI-compatible API)", "models folder")


def form_key(name: str, dataset_id: int) -> str:
    """The session key of form widget ``name`` for dataset ``dataset_id``."""
    return f"{name}_{dataset_id}"


st.title("Run the judge")

info = pick_dataset(st, "Dataset")
if info is None:
    st.info("The store has no dataset yet: load the sample on **Home** or upload a file on **Upload**.")
    st.page_link("pages/home.py", label="Go to Home", icon=":material/home:")
    st.stop()
dataset = cached_dataset(info.id)
FORM = f"run-{info.id}"
KEYS = tuple(form_key(k, info.id) for k in FORM_KEYS)
key = dict(zip(FORM_KEYS, KEYS))
view.keep_form(FORM, KEYS)
servers = api.judge_servers()
if key["run_aspect"] not in st.session_state:   # this dataset's own defaults, on its first visit
    defaults = api_store().run_defaults(info.id)
    own = defaults.aspect not in ASPECT_ADJECTIVES
    st.session_state[key["run_aspect"]] = OWN if own else defaults.aspect
    st.session_state.setdefault(key["own_aspect"], defaults.aspect if own else "")
    st.session_state.setdefault(key["template_choice"], defaults.template.upper())
    st.session_state.setdefault(key["run_task"], defaults.task)
    st.session_state.setdefault(key["own_template"], defaults.template_text)
    st.session_state.setdefault(key["n_contexts"], defaults.contexts)
    st.session_state.setdefault(key["budget"], defaults.budget)
default_kind = (3 if servers.default_is_served else 1 if servers.default_model else 0)
# Start, the plan and the watched run's status come first, drawn once the settings below are
# known: a long context in the preview must not push them out of sight.
top = st.container()

with st.container(border=True):
    st.markdown("**What to judge**")
    c1, c2, c3 = st.columns(3)
    presets = list(ASPECT_ADJECTIVES)
    choice = c1.selectbox("Aspect", presets + [OWN], key=key["run_aspect"],
                          help="A preset becomes its adjective in the prompt (coherence -> coherent). "
                               "A dataset starts at the aspect it has human labels of, else the one "
                               "a reference column is about.")
    own_aspect = (c1.text_input("Your aspect description", placeholder="e.g. factually accurate",
                                key=key["own_aspect"], max_chars=MAX_ASPECT_CHARS)
                  if choice == OWN else "")
    aspect = own_aspect if choice == OWN else choice
    # More aspects judged in the same pass: one run each, one worker, the prompts of one pair
    # sharing the context and both candidates in the judge's prefix cache.
    # The form's model may hold the aspect chosen above since (not offered as a "more" one).
    st.session_state[key["run_more_aspects"]] = [
        a for a in st.session_state.get(key["run_more_aspects"]) or [] if a != aspect]
    more_aspects = [a for a in c1.multiselect(
        "Also judge in the same pass", [p for p in presets if p != aspect],
        key=key["run_more_aspects"],
        help="One run per aspect, judged together by one worker: the prompts of the same pair "
             "share the context and both candidates, so each more aspect costs a fraction of a "
             "run. Each run is stored, resumed and shown on its own.") if a != aspect]
    saved = list(api_store().templates()["name"])  # named templates: a tuning's pick, ...
    if st.session_state.get(key["template_choice"]) == "saved" and not saved:
        st.session_state[key["template_choice"]] = "T1"
    template_choice = c2.radio("Template", ("T1", "T2", "own") + (("saved",) if saved else ()),
                               horizontal=True, key=key["template_choice"],
                               help="T1 and T2 are the paper's (Figure 2); 'own' takes your text with "
                                    "{context} {a} {b} {aspect} placeholders; 'saved' a named "
                                    "template of the store (the pick of a tuning on the Tune "
                                    "wording page, or `compassess templates`).")
    saved_name = (c2.selectbox("Saved template", saved, key=key["saved_template"],
                               format_func=lambda t: plain(t, "text"))
                  if template_choice == "saved" else None)
    task = c3.selectbox("Wording", ("auto",) + TASKS, key=key["run_task"],
                        format_func=lambda t: t if t == "auto" else
                        f"{t}: {TASK_WORDING[t].noun} A/B, {TASK_WORDING[t].source}",
                        help="How the judge is told what it reads (T1/T2, S1/S2 and the absolute "
                             "kind's prompts alike). auto: the task the file's column names say "
                             "(story, instruction, question, code), else dialogue for dialogue "
                             "aspects and summary otherwise.")
    template = template_choice.lower()   # t1, t2, or your own (an api.template_from_text)
    if template_choice == "own":
        own_text = st.text_area("Your template ({context} {a} {b} {aspect}; literal braces doubled)",
                                height=150, key=key["own_template"])
        try:
            template = api.template_from_text(own_text)
        except CompAssessError as e:
            st.error(f"Template problem: {plain(str(e))}")
            st.stop()
    elif template_choice == "saved":
        template = api_store().resolve_template(saved_name)
        if isinstance(template, str):   # deleted since the page was drawn
            st.error(f"Template problem: no saved template named {plain(template)} any more")
            st.stop()
    preview_box = st.container()   # the plan's prompt, once the plan is made

with st.container(border=True):
    st.markdown("**Judge and comparisons**")
    c1, c2, c3 = st.columns(3)
    # COMPASSESS_JUDGE_MODEL (e.g. set by docker-compose to a vLLM server) pre-selects a judge.
    st.session_state.setdefault(key["run_model_kind"], MODEL_KINDS[default_kind])
    model_kind = c1.radio("Model", MODEL_KINDS, key=key["run_model_kind"],
                          help="Bundled: SmolLM2-135M-Instruct (GGUF), works offline after `make setup`. "
                               "Served: one of the vLLM / TGI / Ollama / OpenAI servers configured "
                               "where the app runs (COMPASSESS_OPENAI_BASE_URL with its "
                               "COMPASSESS_OPENAI_API_KEY); no other server can be entered here.")
    served = model_kind.startswith("served")
    if model_kind == "bundled default":
        model_text = ""
    elif model_kind == "models folder":
        model_text = local_model_picker(c1, key["catalog_model"])
    elif served:
        model_text = ""
        if servers.problem:
            c1.error(plain(servers.problem))
        if not servers.servers:
            c1.warning("No judge server is configured for this app. Whoever runs it sets "
                       "COMPASSESS_OPENAI_BASE_URL (and COMPASSESS_OPENAI_API_KEY when the server "
                       "needs a key) in its environment; see docs/deploy.md.",
                       icon=":material/dns:")
        else:
            bases = [sv.base_url for sv in servers.servers]
            keyed = {sv.base_url: sv.has_key for sv in servers.servers}
            if st.session_state.get(key["served_url"]) not in bases:
                st.session_state[key["served_url"]] = servers.default_server or bases[0]
            served_url = c1.selectbox(
                "Server (configured for this app)", bases, key=key["served_url"],
                format_func=lambda b: plain(b, "text") + (" (API key bound to it)"
                                                          if keyed[b] else ""))
            st.session_state.setdefault(key["served_name"], servers.default_served_name)
            served_name = c1.text_input("Model name on the server", key=key["served_name"],
                                        max_chars=200).strip()
            endpoint = c1.radio("Endpoint", ("chat", "completions (exact primer, needs logprobs)"),
                                key=key["served_endpoint"], horizontal=True)
            if served_name:
                try:
                    model_text = servers.spec(served_url, served_name, endpoint.split()[0])
                except InputError as e:
                    c1.error(plain(str(e)))
    else:
        st.session_state.setdefault(key["model_text"],
                                    servers.default_model if default_kind == 1 else "")
        model_text = c1.text_input("Model path or hub id", key=key["model_text"],
                                   placeholder="/models/qwen.gguf or Qwen/Qwen2.5-0.5B-Instruct")
    device = c2.selectbox("Device", ("auto", "cpu", "cuda", "mps"), key=key["run_device"])
    st.session_state.setdefault(key["run_batch_size"], RunSettings.batch_size)
    batch_size = c2.number_input("Batch size (prompts per forward pass; requests in flight for a served judge)",
                                 1, 256, key=key["run_batch_size"], placeholder="auto",
                                 help="Empty: the judge sizes it, 8 prompts on a CPU and from the "
                                      "free memory on a GPU (8 requests for a served judge).")
    strategy = c3.selectbox("Selection strategy", STRATEGIES, key=key["strategy"],
                            help="full: all N(N-1) ordered pairs; random / no-repeat / symmetric "
                                 "(paper §3.4): a budget of R comparisons per context; poe: the pairs "
                                 "that most reduce the product-of-experts score variance; adaptive: "
                                 "chosen from the outcomes so far (both beyond the paper).")
    budget = c3.number_input("Budget R (comparisons per context)", 1, 100_000,
                             disabled=strategy == "full", key=key["budget"])
    n_ctx = c3.number_input(f"Contexts to judge (first N of {len(dataset.contexts)})", 1,
                            len(dataset.contexts), key=key["n_contexts"])
    st.session_state.setdefault(key["run_seed"], RunSettings.seed)
    seed = c2.number_input("Seed (pair sampling)", 0, 2**31 - 1, key=key["run_seed"])
    truncate = c2.checkbox("Truncate long contexts", key=key["truncate_context"],
                           help="A prompt longer than the model's context window is refused when "
                                "the run is planned (the message names the context, the candidates "
                                "and the token count). Tick this to cut the context passage instead, "
                                "just enough to fit; the run records which contexts were cut and the "
                                "comparison view shows it.")

catalog_expander()
model = BUNDLED_MODEL if model_kind == "bundled default" else model_text.strip()
# The widgets fill the options objects the CLI's flags fill; the plan builds the settings.
model_options = ModelOptions(
    model=model, device=device, batch_size=int(batch_size) if batch_size else None, truncate_context=bool(truncate),
    contexts=None if n_ctx == len(dataset.contexts) else int(n_ctx)) if model else None
make_options = lambda: ComparativeOptions(  # noqa: E731 - made where its errors are shown
    aspect=aspect, template=template, task=task, strategy=strategy, budget=int(budget),
    seed=int(seed))
# ---- absolute scores (candidates compared with synthetic references of quality 1..N)
SCORING_MODE = "prompt scoring (baseline)"
mode = st.radio("Mode", ("pairwise comparisons", "absolute scores", SCORING_MODE), horizontal=True,
                key=key["run_mode"],
                help="absolute scores: every candidate is compared with N references of known quality "
                     "(written by the model, or your anchors) and gets a score you can threshold; "
                     "see the Scores page. Template and selection strategy do not apply.\n\n"
                     "prompt scoring (baseline): the model scores each candidate alone, 1 to 10, "
                     "with the paper's template s1 or s2 (§4.3.2); the argmax and the G-Eval "
                     "expected score are stored and ranked on the Rankings page. Template T1/T2, "
                     "selection strategy, budget and seed do not apply.")
if mode == "absolute scores":
    with st.container(border=True):
        st.markdown("**Absolute scores (synthetic references)**")
        a1, a2, a3 = st.columns(3)
        st.session_state.setdefault(key["abs_levels"], DEFAULT_LEVELS)
        st.session_state.setdefault(key["abs_max_new"], GenerationOptions.max_new_tokens)
        n_levels = a1.number_input("Reference levels N", 2, 20, key=key["abs_levels"])
        max_new = a1.number_input("Max new tokens per reference", 8, 1024, key=key["abs_max_new"])
        orders = a2.selectbox("Orders", list(ORDERS), key=key["abs_orders"],
                              help="both: each comparison in both orders, averaged (removes positional bias)")
        sample = a2.checkbox("Sample references (greedy otherwise; seeded)", key=key["abs_sample"])
        variant = a3.selectbox("Label words", list(VARIANTS), key=key["abs_variant"],
                               format_func=lambda v: {"bws": "Better / Worse / Similar",
                                                      "yes-no": "Yes / No (ablation)"}[v])
        ref_source = a3.radio("References", ("generated", UPLOADED), key=key["abs_refs"],
                              format_func=lambda r: {"generated": "written by the model",
                                                     UPLOADED: "my anchors (upload on Scores)"}[r])
    make_options = lambda: AbsoluteOptions(  # noqa: E731
        aspect=aspect, n_levels=int(n_levels), reference_set=ref_source,
        task=task if task in ABSOLUTE_TASKS else "auto", variant=variant, orders=orders,
        generation=GenerationOptions(max_new_tokens=int(max_new), sample=bool(sample)),
        seed=int(seed))
if mode == SCORING_MODE:
    with st.container(border=True):
        st.markdown("**Prompt scoring (paper §4.3.2 baseline)**")
        s1, s2 = st.columns([1, 3])
        score_name = s1.radio("Scoring template", SCORING_TEMPLATES, horizontal=True,
                              key=key["score_template"],
                              help="The paper's Figure 3 templates: s1 'Score the response between 1 "
                                   "and 10 based on how {adjective} ...', s2 'Provide a score between "
                                   "1 and 10 that measures ...'. The Wording choice above applies.")
        scoring_box = s2.container()
        st.caption("Each candidate is scored once: the argmax score (prompt scoring) and the "
                   "expected score sum_s s P(s) over 1..10 (G-Eval) are both stored. Model, device, "
                   "batch size and 'Contexts to judge' above apply; template T1/T2, selection "
                   "strategy, budget and seed do not.")
    make_options = lambda: ScoringOptions(aspect=aspect, template=score_name, task=task)  # noqa: E731
    if served:
        st.error("Prompt scoring reads the probabilities of the score tokens from a local model: "
                 "choose the bundled model, a local path or .gguf file, or a hub id (a served model "
                 "cannot be used here).")
        make_options = None
view.save_form(FORM, KEYS)
plan = None
try:
    if model_options is not None and make_options is not None:
        plan = api_store().plan_run(dataset, make_options(), model_options, also=more_aspects)
except CompAssessError as e:  # e.g. an odd budget for 'symmetric': say so before Start
    top.error(f"These settings cannot run: {plain_message(e)}")
if plan is not None and plan.preview is not None:
    shown = plan.preview
    if mode == SCORING_MODE:
        scoring_box.caption(f"Template {plan.settings.template_name} ({{context}} {{a}} {{aspect}} "
                            "{aspect_noun} placeholders):")
        scoring_box.code(shown.template, language=None, wrap_lines=True)
        what = f"candidate {plain(shown.candidate_ids[0])}"
        then = "the score 1..10"
    else:
        what = " vs ".join(plain(c) for c in shown.candidate_ids)
        then = "' A' or ' B'"
    with (scoring_box if mode == SCORING_MODE else preview_box).expander(
            f"Live preview: the prompt of {plain(shown.context_id)}, {what}", expanded=False):
        st.code(shown.text, language=None, wrap_lines=True)
        st.caption(f"Answer primer the model continues: {plain(repr(shown.primer))} -> next "
                   f"token(s): {then}")
if plan is not None:
    each = (f" for {len(plan.aspects)} aspects ({plain(', '.join(plan.aspects))}), one run "
            "each, judged in one pass" if len(plan.aspects) > 1 else "")
    left = (f"runs of these settings store {plan.stored:,} of them already, so Start resumes "
            f"them: {plan.estimate_left.sentence()}" if plan.stored and len(plan.aspects) > 1
            else f"run {plain(plan.default_name)} stores {plan.stored:,} of them already, so "
            f"Start resumes it: {plan.estimate_left.sentence()}" if plan.stored
            else plan.estimate.sentence())
    if plan.planned and plan.stored >= plan.planned:
        # Nothing left to judge: say so, with no time and no tokens planned.
        whose = (f"the runs of these settings ({len(plan.aspects)} aspects)"
                 if len(plan.aspects) > 1 else f"run {plain(plan.default_name)}")
        top.success(f"**Complete: {whose} already store{'' if len(plan.aspects) > 1 else 's'} "
                    f"all {plan.planned:,} {plan.unit}** on {plan.n_contexts} context(s). "
                    "Nothing is left to judge; open its results on the Rankings or Bias page, "
                    "or change a setting to plan another run.", icon=":material/task_alt:")
    else:
        top.info(f"**Plan: {plan.planned:,} {plan.unit}**{each} on {plan.n_contexts} "
                 f"context(s); {left}. What is already stored (a resumed run, or the same "
                 "prompts judged before by this model) is not recomputed.",
                 icon=":material/schedule:")
    against = (f"the reference column {plan.reference}" if plan.reference is not None else
               "none: no reference column is named for this aspect or a synonym of it (the "
               "result pages start at the first one; choose the right one there)")
    # Prose, with the names it quotes from the data (columns, the aspect) inert.
    top.caption(plain_within(f"The judge will read: {plan.reads}. Human scores it is checked "
                             f"against by default: {against}.",
                             [*dataset.text_columns, plan.reference, plan.settings.aspect]))
    if plan.memory is not None and plan.memory.need is not None:
        top.caption(plain_message(plan.memory.line()))
    for line in plan.advice:  # what the CLI prints as warnings
        top.warning(plain_message(line))
    if plan.memory is not None and plan.memory.problem:   # loading it would be refused
        top.error(plain_message(plan.memory.problem), icon=":material/memory:")
    if plan.judge_problem:    # the allowlist of served judges: nothing may start
        top.error(plain_message(plan.judge_problem))
run_name = top.text_input("Run name", value=plan.default_name if plan else "",
                          max_chars=MAX_NAME_CHARS,
                          help="Starting a run with an existing name and the same settings resumes "
                               "it. Several aspects: NAME-ASPECT each.")
bad_name = plan.name_problem(run_name) if plan is not None else None
if plan is not None and bad_name:
    top.error(plain(bad_name))
# A run of this name that a live worker is judging now: Start would only say so, so it waits.
live_run = None
if plan is not None and not bad_name and len(plan.together) == 1:
    try:
        existing = api_store().get_run(run_name.strip())
        live_run = existing if existing.progress().active else None
    except CompAssessError:
        live_run = None   # no run of this name yet: Start creates it
if live_run is not None:
    top.caption(f"Run {plain(live_run.name)} is being judged by a live worker now: watch or "
                "cancel it below; Start is available again when it stops.")
# Start is keyed by the dataset and the plan it was drawn with: a click on the Start of a screen
# the app has since replaced (another dataset, other settings) starts nothing.
if top.button("Start", type="primary", icon=":material/play_arrow:",
              key=f"run_start_{info.id}_{plan.default_name if plan is not None else ''}",
              disabled=plan is None or bad_name is not None or plan.judge_problem is not None
              or live_run is not None
              or (plan.memory is not None and plan.memory.problem is not None)):
    require()  # the person holds the role now (pages/_auth.py)
    try:
        runs_now = (api_store().create_runs(info.id, plan.together, name=run_name.strip())
                    if len(plan.together) > 1 else
                    [api_store().create_run(info.id, plan.settings, name=run_name.strip())])
        to_start = []
        for run in runs_now:
            progress = run.progress()
            if progress.active:
                top.warning(f"Run {plain(run.name)} already has a live worker; watching it below.")
            elif (progress.state == "completed" and progress.total
                  and progress.done >= progress.total):
                top.info(f"Run {plain(run.name)} is already complete ({progress.done}/"
                         f"{progress.total}); nothing to do.")
            else:
                to_start.append(run)
        if to_start:   # one worker for them all; a served judge not configured: fail closed
            api_store().job("run", to_start).start()
            st.toast(f"Started run {plain(', '.join(r.name for r in to_start))}")
        st.session_state[WATCH] = runs_now[0].id
        view.put("run", runs_now[0].id)
    except CompAssessError as e:
        top.error(plain(str(e)))

top.divider()
top.subheader("Runs")
runs = list_runs()
if not runs:
    top.info("No run yet: configure one below and press Start.")
    st.stop()
by_id = {r.id: r for r in runs}
# The runs that judge a tuning's wordings are the Tune page's: never watched unasked here.
tuning_runs = {r.id for t in api_store().tunings() for r in t.runs().values()}
live = [r.id for r in runs if r.id not in tuning_runs and r.progress(refresh=False).active]
# The run chosen here or just started in this session (by id: a rename keeps it); else the live
# one; else the one the other pages show (the view's run); else the newest. Opening this page
# never changes the run the other pages show: only a pick here or Start does.
watch = st.session_state.get(WATCH)
if watch not in by_id:
    in_view = view.get("run") if view.get("run") in by_id else None
    ours = [i for i in by_id if i not in tuning_runs]
    watch = live[-1] if live else in_view or (ours or list(by_id))[-1]
section = top.container()
# Each run's label with its state as this render found it: a label computed again later (a
# heartbeat now older than STALE_AFTER_S) would no longer match the option drawn.
labels = {r.id: f"{plain(r.name, 'text')} [{r.progress(refresh=False).state_text}]" for r in runs}


def _watch(run_id: int) -> None:
    """The person picked a run to watch: the other pages show it too (a tuning's run stays the
    Tune page's)."""
    st.session_state[WATCH] = run_id
    if run_id not in tuning_runs:
        view.put("run", run_id)


# The picker sits above the run's status and progress but is drawn after them (into its box):
# the browser redraws in the order things are drawn, so it never shows the new run's name beside
# the previous run's progress (right after Start, or a pick); and the progress line names its run.
picker_box, panel_box = section.container(), section.container()

#: Seconds between two reads of a silent run (marked running, no heartbeat lately).
SILENT_POLL_S = 5.0
#: Why a run is in each worker state (the state's own words are ``RunProgress.state_text``).
STATE_HELP = {
    "working": "The worker is computing; results are stored after every batch.",
    "cancelling": "Cancel requested: the worker stops after the batch it is computing and keeps "
                  "everything computed.",
    "stale": f"No heartbeat for over {STALE_AFTER_S:.0f} s: the worker died, the machine slept, "
             "or it is too busy to let the worker beat (this page keeps looking). "
             "Resume starts a new worker; nothing stored is recomputed.",
    "completed": "Everything planned is stored.",
    "cancelled": "Stopped on request; Resume continues where it stopped.",
    "failed": "The worker failed; see the message and the log. Resume retries.",
    "pending": "The run exists but no worker is running it.",
}

#: The name each watched run was last shown under (by id): Cancel and Resume act on that run
#: only while it is still called so (``expect_name``).
SHOWN = "run_watch_shown"


def _act(run_id: int, action: str) -> bool:
    """Cancel or resume (``action``) the run shown with id ``run_id``, as it was shown, with
    the runs judged in one pass with it (one worker judges them all): a run renamed or deleted
    since is refused with the API's message. True when it was done."""
    require()  # the person holds the role now (pages/_auth.py)
    shown = st.session_state.get(SHOWN, {}).get(run_id)
    try:
        run = api_store().get_run(run_id, expect_name=shown)
        group = run.judged_with()
        if action == "cancel":   # the one job of the group, as `compassess job cancel` does
            live = [r for r in group if r.progress().active]
            if live:
                api_store().job("run", live).cancel()
        else:   # refuses a live worker and a served judge not configured
            api_store().job("run", [r for r in group if r.progress().can_resume]).start()
        return True
    except ObjectChanged as e:
        st.error(plain(str(e)), icon=":material/sync_problem:")
    except CompAssessError as e:
        st.error(plain(str(e)))
    return False


def progress_panel(run_id: int, was_active: bool) -> None:
    # Every tick re-checks who is watching: a person removed (or a configuration that broke)
    # since the page was drawn gets the gate's page instead of more progress.
    recheck()
    try:
        run = api_store().get_run(run_id)
    except InputError:
        st.info("This run is no longer in the store (deleted?).")
        return
    # Status and progress are drawn after the buttons (into these slots above them), so a Cancel
    # click shows "cancelling…" in the same rerun.
    status_slot, progress_slot, message_slot = st.empty(), st.empty(), st.empty()
    progress = run.progress(refresh=False)
    group = run.judged_with()   # the runs judged in one pass with it (several aspects)
    others = [(r, r.progress(refresh=False)) for r in group if r.id != run.id]
    c1, c2, c3 = st.columns([1, 1, 3])
    # A slot, so a button the run no longer offers goes at once (not beside the next status).
    button_slot = c1.empty()
    if progress.can_cancel or any(p.can_cancel for _, p in others):
        if button_slot.button("Cancel", icon=":material/stop:", key=f"cancel_{run.id}"):
            _act(run.id, "cancel")
            progress = run.progress()
    elif (progress.can_resume or any(p.can_resume for _, p in others)) and not any(
            p.active for _, p in others):
        if button_slot.button("Resume", icon=":material/replay:", type="primary",
                              key=f"resume_{run.id}"):
            if _act(run.id, "resume"):
                st.rerun()
    st.session_state.setdefault(SHOWN, {})[run.id] = run.name
    state, done = progress.state, progress.done
    status_slot.markdown(f"**Status: {progress.state_text}** — {STATE_HELP.get(state, '')}")
    # A bar's text is markdown: the run's name and aspect (user text) go in inert.
    named = plain(f"{run.name} ({run.settings.aspect})" if others else run.name) + ": "
    progress_slot.progress(progress.fraction or 0.0, text=named + progress.line)
    if others:
        st.caption(f"Judged in one pass with {len(others)} other run(s), one per aspect; "
                   "Cancel and Resume act on all of them.")
        for other, other_progress in others:
            st.progress(other_progress.fraction or 0.0,
                        text=plain(f"{other.name} ({other.settings.aspect})") + ": "
                        + other_progress.line)
    if progress.message:  # the worker's, a server's or an error's words: plain text
        message_slot.caption(f"Message: {plain(progress.message)}")
    if done:
        results = run.run_kind.results_page   # the kind says where its results are shown
        # Beside the Cancel or Resume button, else in its place (no gap before it).
        link_col = c2 if (progress.can_cancel or progress.can_resume) else c1
        link_col.page_link(f"pages/{results}.py", label=f"See {results}",
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
                         hide_index=True, width="stretch", placeholder="",
                         column_config={"p": st.column_config.NumberColumn(format="%.3f"),
                                        "label_mass": st.column_config.NumberColumn(
                                            "label mass", format="%.3f"),
                                        "latency_ms": st.column_config.NumberColumn(
                                            "ms per comparison", format="%.0f",
                                            help="Its batch's time divided by the batch's "
                                                 "prompts: the comparisons of one batch share "
                                                 "it.")})
    with st.expander("Worker log (last lines)"):
        st.code(run.worker_log() or "(no log yet)", language=None)
    # This tick's reads (a store read per run at its start, the shown run's again after a
    # Cancel): no second read of every run of the group.
    if was_active != (progress.active or any(p.active for _, p in others)):
        # The whole page: a run that ended stops the polling and refreshes the run list; a
        # silent run whose worker beats again is polled every second again.
        st.rerun()


watched = [r.progress(refresh=False) for r in by_id[watch].judged_with()]
active = any(p.active for p in watched)
# A live run is read every second; a silent one (no heartbeat lately) less often, as its worker
# may only be starved by a loaded machine; a run that ended, never.
poll_s = 1.0 if active else SILENT_POLL_S if any(p.silent for p in watched) else None
with panel_box:
    st.fragment(progress_panel, run_every=poll_s)(watch, active)
pick_id(picker_box, "Watch run", list(by_id), lambda i: labels.get(i, str(i)), key="watch_w",
        current=watch, on_pick=_watch)
with section:
    st.divider()
