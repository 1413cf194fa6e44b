# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: memlab (.venv)
#     language: python
#     name: memlab
# ---

# %% [markdown]
# # 09 · Answers: the replies of a chat model, judged, and the time of a turn
#
# Replays every question through the chat model at `chat_url` (OpenAI-compatible) under each
# of `conditions`: no memory (`off`), the memories without instructions (`raw`, the write-up's
# A format), the B-format block at the spec given (`today`) and at the spec the sweep chooses
# (`tuned`). Each reply is judged per question kind by the LLM judge (`judge_url`, else the chat
# endpoint), checked against the phrases the dataset gives (`expect`, `avoid`) and scored by
# token F1 where it gives a reference answer; the turn is timed step by step. With `chat_url`
# empty (the default batch) the notebook says so and does nothing else. The rules, the commands
# and the measured figures: docs/answers.md.

# %% tags=["parameters"]
source: str = "embedded"  # score source
lang: str = "en"  # text language to embed
model: str = ""  # embedding model name or folder
embed_url: str = ""  # embedding server URL
embed_model: str = ""  # model asked of the server
dataset: str = "seed16"  # packaged dataset name or dataset folder
bonus: float = 0.05  # recency bonus at age 0
tau_days: float = 14.0  # recency decay constant
threshold: float = None  # post-bonus score a memory needs to be injected
candidates: int = 8  # raw nearest neighbours fetched before the re-sort
inject: int = 3  # most memories injected into the prompt
decay: str = "exp"  # recency decay family, weight 1 at age 0 and 1/e at tau_days
combine: str = "add"  # how the bonus enters
bonus_range: str = ""  # sweep: bonus values, start:stop:step or a comma list
tau_range: str = "1:60:1"  # sweep: tau_days values
threshold_range: str = ""  # sweep: threshold values
select: str = "max-margin"  # sweep: selection rule among the feasible configurations
boot: int = 200  # bootstrap resamples (of each kind)
seed: int = 0  # random seed
chat_url: str = ""  # answers: chat endpoint URL
chat_model: str = ""  # answers: model asked of the chat server
temperature: float = 0.7  # answers: the chat's sampling temperature
max_tokens: int = 256  # answers: most tokens per reply
repeats: int = 1  # answers: replies per question and condition
questions: str = ""  # answers: question ids to replay, a comma list
concurrency: int = 1  # answers: chat requests in flight at once, the replies' and the judge's
conditions: str = "off,raw,today,tuned"  # answers: conditions, a comma list
judge_url: str = ""  # answers: the LLM judge's endpoint
judge_model: str = ""  # answers: model asked of the judge's server
judge_format: str = "text"  # answers: how the judge answers
llm_judge: bool = True  # answers: skip the LLM judge
store: str = "local"  # answers: where the store's query is timed
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats

# %%
from memlab import ScoreOptions, build_problem
from memlab.answers.cache import ReplyCache
from memlab.answers.chat import ChatClient, ChatConfig
from memlab.answers.conditions import TuneGrid, build_conditions
from memlab.answers.judge import JUDGE_FORMATS, JUDGE_MAX_TOKENS
from memlab.answers.study import answer_study
from memlab.answers.tables import study_text
from memlab.embedding.server import server_config
from memlab.output import figures
from memlab.output.report import Report

report = Report(out_dir, fig_formats)
run = bool(chat_url)
if not run:
    print("chat_url is empty: nothing to do (run with -p chat_url=http://127.0.0.1:8080/v1)")
    report.skip(
        "no chat endpoint given (chat_url is empty)",
        {"chat_url": chat_url},
        fill={"chat_url": "http://127.0.0.1:8080/v1"},
        how="serve an OpenAI-compatible chat model (python -m memlab.answers.local_server --port 8080 "
        "serves SmolLM2-135M with the chat extra; docs/answers.md)",
    )

# %%
if run:
    options = ScoreOptions(source, lang, model or None, server=server_config(embed_url, embed_model))
    problem = build_problem(
        dataset,
        options,
        candidates=candidates,
        inject=inject,
        threshold=threshold,
        bonus=bonus,
        tau_days=tau_days,
        decay=decay,
        combine=combine,
    )
    tune = TuneGrid(select, bonus_range, tau_range, threshold_range or None)
    chosen = build_conditions(problem, tuple(conditions.split(",")), (), tune)
    chat = ChatClient(ChatConfig(chat_url, chat_model, temperature, max_tokens, seed))
    same = not judge_url or judge_url == chat_url
    judge = ChatClient(
        ChatConfig(
            judge_url or chat_url,
            judge_model or (chat_model if same else ""),
            0.0,
            JUDGE_MAX_TOKENS,
            0,
            JUDGE_FORMATS[judge_format],
            option="judge_url",
        )
    )
    study = answer_study(
        problem,
        chosen,
        chat,
        judge if llm_judge else None,
        ReplyCache(),
        repeats=repeats,
        questions=tuple(q for q in questions.split(",") if q),
        store=store,
        boot=boot,
        seed=seed,
        progress=False,
        concurrency=concurrency,
    )
    names = [c.name for c in chosen]
    print(study_text(study, [f"chat: {study.chat_model}; judge: {study.judge_model or 'none'}"], boot))

# %% [markdown]
# ## The replies side by side, per condition

# %%
if run:
    score = "judge" if llm_judge else "phrases"
    report.figure(
        "replies",
        figures.replies_table(study.replies, names, score),
        f"Each question (by its words) and its reply under each condition, tinted by the {score} verdict",
    )
    report.table("replies", study.replies, "Every reply with its verdicts, model ids and timings")

# %% [markdown]
# ## Judged rates per condition and question kind

# %%
if run:
    report.table("rates", study.rates, "Rates per condition, kind and score, with 95% bootstrap intervals")
    for score in dict.fromkeys(study.rates["score"]):
        report.figure(f"rates_{score}", figures.rate_bars(study.rates, score), f"{score}: rate per condition")

# %% [markdown]
# ## The time of a turn

# %%
if run:
    report.table("timing", study.timing, "Per condition and step: median, 95th percentile and range (s)")
    report.figure("turn_time", figures.turn_time_bars(study.timing), "Median time per step of a turn")
    report.finish(
        {
            "chat_url": chat_url,
            "chat_model": study.chat_model,
            "model_ids": study.model_ids,
            "judge_model_ids": study.judge_model_ids,
            "conditions": names,
        }
    )
