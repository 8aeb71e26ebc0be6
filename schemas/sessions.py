"""Active-clustering sessions: questions for people and crowds, their answers, the model."""

from marshmallow import RAISE, Schema, fields, validate

from .constraints import ConstraintsSchema
from .fields import FiniteFloat, NumberOrChoice, StrictInteger, one_of
from .jobs import JobCreateSchema
from .paging import PageArgsSchema


class URASCParamsSchema(Schema):
    """Parameters of the URASC session strategy (names = ``clustering.URASC`` parameters)."""

    class Meta:
        unknown = RAISE

    step_model = one_of("nonparametric", ["nonparametric", "parametric"],
            "URASC+N (kNN label entropy) or URASC+P (GMM)")
    score = one_of("product", ["product", "gradient", "entropy"])
    representative = one_of("most_similar", ["most_similar", "random", "founder"])
    k_growth = one_of("sets", ["sets", "robust", "verify"],
            "sets: the paper's rule; verify (with representative=founder): answers are votes, a new set must be "
            "confirmed by repeated 'no's (best with wrong answers); robust: an older, weaker variant of verify")
    kernel = one_of("local", ["local", "gaussian"],
            "local: self-tuning kNN graph (default); gaussian: the paper's dense Gaussian graph")
    assign = one_of("auto", ["auto", "kmeans", "propagate"],
            "final labels: kmeans on the embedding (paper), propagate (label spreading from the certain sets), or "
            "auto (kmeans unless it contradicts the answered sets; propagate under k_growth=verify)")
    explore = NumberOrChoice(["auto"], low=0.0, low_inclusive=True, high=1.0, load_default="auto",
                             metadata={"description": "fraction of rounds that ask about the farthest typical "
                                                      "uncertain sample (cluster discovery); auto: with "
                                                      "n_clusters known, every round until each cluster has a "
                                                      "certain set, then every third; with K unknown every "
                                                      "third, none under k_growth=robust; under "
                                                      "k_growth=verify every round once there are four or more "
                                                      "clusters and an answer contradicts the sets"})
    discriminant_weight = NumberOrChoice(
        ["auto"], low=0.0, low_inclusive=True, high=1.0, load_default="auto",
        metadata={"description": "weight of the kNN graph in the discriminant space of the certain sets (LDA) "
                                 "in the graph that spreads their labels; 0: the constrained graph alone; "
                                 "auto: with three or more certain sets 0.5 under k_growth=verify and 0.3 "
                                 "under k_growth=sets, else 0"})
    n_neighbors = StrictInteger(load_default=10, validate=validate.Range(min=1, max=1000))
    n_candidates = StrictInteger(load_default=50, validate=validate.Range(min=1, max=10000))
    diversity = FiniteFloat(load_default=1.0, validate=validate.Range(min=0, max=1))
    n_init = StrictInteger(load_default=10, validate=validate.Range(min=1, max=100))


class TripletParamsSchema(Schema):
    """Parameters of triplet sessions (names = ``clustering.ActiveDCRC`` parameters)."""

    class Meta:
        unknown = RAISE

    epsilon = FiniteFloat(load_default=0.1, validate=validate.Range(min=0, max=2 / 3),
                          metadata={"description": "DCRC's answer-noise rate (crowds: 0.1-0.2)"})
    n_init = StrictInteger(load_default=4, validate=validate.Range(min=1, max=20),
                           metadata={"description": "DCRC's EM starts per re-clustering"})
    max_iter = StrictInteger(load_default=100, validate=validate.Range(min=1, max=1000),
                             metadata={"description": "DCRC's EM iterations per re-clustering; 30 is about "
                                                      "twice as fast on large data"})
    warm_start = fields.Boolean(load_default=True, truthy={True}, falsy={False},
                                metadata={"description": "each re-clustering also starts EM from the previous "
                                                         "model (false: fresh starts only, the spec's fit)"})
    diversity_neighbors = StrictInteger(load_default=5, validate=validate.Range(min=0, max=100),
                                        metadata={"description": "no two samples asked about in one batch are "
                                                                 "this close (nearest neighbours)"})


SESSION_STATES = ("INITIALIZING", "ACTIVE", "COMPLETED", "FAILED")

#: question_type -> the strategies its sessions take (the first is the default).
SESSION_STRATEGIES = {"pairwise": ("urasc", "random"), "triplet": ("uncertainty", "random")}

#: Seconds a worker's lease on a question holds a slot (also what sessions created before the
#: option get; ``workers.session_store`` keeps the same default).
DEFAULT_LEASE_SECONDS = 600

#: Measured parameter sets a session can name in ``preset`` (listed by ``GET /v1/methods``).
SESSION_PRESETS = [{
    "name": "noisy_answers",
    "question_type": "pairwise",
    "description": "For answers that are sometimes wrong (people, or a crowd's vote): answers are votes and a new "
                   "certain set needs repeated 'no's. With 10% wrong answers (bench/README.md, 5 trials, K "
                   "unknown, ARI at 200 questions over the same mode's noise-free ARI) it keeps iris .94, wine "
                   ".94, wdbc .96, ionosphere .86, segment .83 (.80 over 40 trials; K known .84), against .52 / "
                   ".59 / .48 / .35 / .60 with the default (the paper's rule); in batches of 10 (20 trials) "
                   ".66-.91 (segment .66, ionosphere .86, wdbc .91). With three answers per question (majority) "
                   "segment keeps .87 and the others .96-1.00 of the single-answer noise-free ARI. "
                   "Noise-free it needs more questions early (segment at 50 questions .38 against .56).",
    "params": {"k_growth": "verify", "representative": "founder"},
}]


class WorkerQualitySchema(Schema):
    """How gold answers flag workers, and whether a flagged worker's answers still count."""

    class Meta:
        unknown = RAISE

    min_gold_accuracy = FiniteFloat(load_default=0.7, validate=validate.Range(min=0, max=1), metadata={
        "description": "a worker whose accuracy on gold questions (POST .../gold, scored on the annotator page) "
                       "is below this is flagged (one answering two-way questions at random scores about 0.5)"})
    min_gold_answered = StrictInteger(load_default=5, validate=validate.Range(min=1, max=1000), metadata={
        "description": "gold answers a worker must have given before it can be flagged"})
    exclude_flagged = fields.Boolean(load_default=False, truthy={True}, falsy={False}, metadata={
        "description": "leave flagged workers' answers out of every later pass: out of the aggregation (and "
                       "of the one-coin model's fit) of the questions closed from then on; questions already "
                       "told to the model stay as they were. A flagged worker is also handed no more questions "
                       "(lease and annotator page) and its later answers are rejected, filling no slot"})


_JOB_FIELDS = JobCreateSchema._declared_fields


class SessionRefitSchema(Schema):
    """``POST /v1/sessions/{id}/refit`` body: a job on the session's dataset and answers."""

    class Meta:
        unknown = RAISE

    method = fields.String(load_default="auto", metadata={
        "description": "a method id from GET /v1/methods that takes the session's answers (pairwise sessions: "
                       "must_link / cannot_link; triplet sessions: triplets); auto, the default, chooses the "
                       "method, its settings (and K) by held-out answers"})
    n_clusters = StrictInteger(allow_none=True, metadata={
        "description": "K; absent: the session's n_clusters; null (the session's when it has none) only with "
                       "method auto, which then chooses K"})
    params = _JOB_FIELDS["params"]
    preset = _JOB_FIELDS["preset"]
    scale = _JOB_FIELDS["scale"]
    random_state = StrictInteger(validate=validate.Range(min=0, max=2**32 - 1),
                                 metadata={"description": "absent: the session's random_state"})
    callback_url = _JOB_FIELDS["callback_url"]


class SessionCreateSchema(Schema):
    """``POST /v1/sessions`` body."""

    class Meta:
        unknown = RAISE

    dataset_id = fields.String(required=True, validate=validate.Length(min=1, max=100))
    strategy = fields.String(
        load_default=None, validate=validate.OneOf(["urasc", "uncertainty", "random"]),
        metadata={"description": "pairwise: urasc (uncertainty reduction, the default) or random pairs (baseline); "
                                 "triplet: uncertainty (samples DCRC finds torn between two clusters, "
                                 "asked against both; the default) or random triples (baseline)"})
    n_clusters = StrictInteger(load_default=None, allow_none=True,
                               metadata={"description": "K if known; null = unknown (grows as answers arrive; pairwise "
                                                        "sessions only)"})
    budget = StrictInteger(load_default=100, validate=validate.Range(min=1, max=100000),
                           metadata={"description": "maximum number of questions the model uses (closed questions "
                                                    "it leaves unused, e.g. implied by earlier answers, do not "
                                                    "count); once that many have all their answers, further "
                                                    "answers are late"})
    question_type = one_of("pairwise", ["pairwise", "triplet"],
                           "pairwise: 'same cluster?' (URASC); triplet: 'is a closer to b than to c?' (DCRC, "
                           "n_clusters required)")
    aggregation = one_of("one_coin", ["one_coin", "majority", "dawid_skene", "glad", "mace"],
                         "how several answers to one question become one: one_coin = one-coin Dawid-Skene over "
                         "the session's answers once two workers have answered two common questions (majority "
                         "vote before that), each worker weighted by its estimated accuracy; majority = majority "
                         "vote always. In bench/crowd_aggregation.py one_coin was at or above majority vote "
                         "in 26 of 30 simulated crowds and sizes (up to +.11); below it by .11-.12 where two of "
                         "three fixed workers answered at random on balanced questions, by at most .014 elsewhere. "
                         "dawid_skene, glad, mace: crowd-kit's models over the session's answers "
                         "(bench/crowd_quality.py compares them; one_coin stays the default)")
    answers_per_question = StrictInteger(
        load_default=1, validate=validate.Range(min=1, max=15),
        metadata={"description": "answers collected before a question closes; when they tie (as many "
                                 "must_link as cannot_link, or yes as no; dont_know left out) the question takes "
                                 "one more answer at a time until they do not, at most answers_per_question "
                                 "more (its tie_breakers), and counts once against the budget"})
    pool_size = StrictInteger(load_default=20, validate=validate.Range(min=1, max=500),
                              metadata={"description": "questions kept ready for parallel workers"})
    lease_seconds = StrictInteger(
        load_default=DEFAULT_LEASE_SECONDS, validate=validate.Range(min=1, max=86400),
        metadata={"description": "how long a question handed to a worker (POST .../questions with worker_id) "
                                 "holds one of its answers_per_question slots; a question goes to no more "
                                 "workers at once than it still needs answers, so a crowd spreads over the pool "
                                 "instead of answering the same questions late"})
    scale = one_of("zscore", ["none", "zscore"], "feature scaling before the graph (URASC spec: z-score)")
    params = fields.Dict(keys=fields.String(), load_default=dict,
                         metadata={"description": "strategy parameters: URASCParams (pairwise sessions) or "
                                                  "TripletParams (triplet sessions); unknown names are a 422"})
    preset = fields.String(load_default=None, allow_none=True,
                           metadata={"description": "a session preset from GET /v1/methods (session_presets): "
                                                    "its params, under any given in params"})
    constraints = fields.Nested(
        ConstraintsSchema, load_default=None,
        metadata={"description": "constraints the client already has, in the same form as a job's: must_link / "
                                 "cannot_link for pairwise sessions, triplets / relative for triplet sessions. The "
                                 "model takes them as answers that cost no question (counters.seeded counts those "
                                 "it used); a pairwise session takes a pair once one of its rows is in a certain "
                                 "set (URASC asks about a row against a set), so pairs that chain to one another "
                                 "are used at once and the others once the answers reach them; seed_sample defaults "
                                 "to the row the pairs name most. Weights and hierarchies are not taken"})
    worker_quality = fields.Nested(WorkerQualitySchema, load_default=dict, metadata={
        "description": "gold-based flags of workers (their gold accuracy, from the annotator page's gold "
                       "questions) and whether a flagged worker's answers stop counting"})
    random_state = StrictInteger(load_default=0, validate=validate.Range(min=0, max=2**32 - 1))
    callback_url = fields.Url(load_default=None, require_tld=False, schemes={"http", "https"},
                              metadata={"description": "POSTed a signed event after every re-clustering pass "
                                                       "(session.model_updated, session.completed, "
                                                       "session.failed); public hosts only, as for jobs"})


class ConditionSchema(Schema):
    type = fields.String()
    status = fields.String(validate=validate.OneOf(["True", "False"]))
    observed_revision = fields.Integer()
    reason = fields.String(allow_none=True)


class WorkerQualityViewSchema(Schema):
    min_gold_accuracy = FiniteFloat()
    min_gold_answered = fields.Integer()
    exclude_flagged = fields.Boolean()


class SessionSchema(Schema):
    id = fields.String()
    dataset_id = fields.String()
    strategy = fields.String()
    n_clusters = fields.Integer(allow_none=True)
    budget = fields.Integer()
    budget_used = fields.Integer(metadata={"description": "questions the model used (its n_questions_used)"})
    budget_remaining = fields.Integer(metadata={"description": "budget - budget_used"})
    budget_committed = fields.Integer(metadata={
        "description": "budget_used plus the questions with all their answers waiting for the next pass; once it "
                       "reaches budget, answers are late and no questions are leased (until a pass leaves some "
                       "unused)"})
    question_type = fields.String()
    answers_per_question = fields.Integer()
    lease_seconds = fields.Integer()
    aggregation = fields.String()
    worker_quality = fields.Nested(WorkerQualityViewSchema, metadata={
        "description": "gold-based flags of workers and whether flagged workers' answers count (see the body)"})
    params = fields.Dict()
    preset = fields.String(allow_none=True,
                           metadata={"description": "the preset named at creation, or null"})
    state = fields.String(validate=validate.OneOf(SESSION_STATES))
    revision = fields.Integer(metadata={"description": "increases with every answer batch that added an answer"})
    observed_revision = fields.Integer(metadata={
        "description": "revision the current model reflects: up to date (ModelUpToDate True) when equal to "
                       "revision. Answers that close no question change nothing the model uses, so they do not "
                       "hold it back"})
    counters = fields.Dict(keys=fields.String(), values=fields.Integer(), metadata={
        "description": "answers_received = accepted + duplicate + late + rejected (answer outcomes); "
                       "questions_closed (aggregated and told to the model) = budget_used + questions_unused "
                       "(closed questions the model did not use, see the question's model_outcome); "
                       "disagreements (closed questions with two different informative answers: must_link and "
                       "cannot_link, or yes and no; a dont_know beside agreeing answers is no disagreement); "
                       "conflicts (closed questions URASC refused as contradicting earlier answers, also in "
                       "questions_unused)"})
    conditions = fields.List(fields.Nested(ConditionSchema))
    disagreements = fields.List(fields.Dict(), metadata={
        "description": "the last 20 closed questions counted under counters.disagreements: question_id, items, "
                       "votes, aggregated, tie_breakers (answers asked beyond answers_per_question because the "
                       "votes tied) and tied (they still tie: closed after the most tie-breakers)"})
    n_seeds = fields.Integer(metadata={"description": "known constraints given at creation (counters.seeded: "
                                                    "those the model has taken, free of budget)"})
    conflicts = fields.List(fields.Dict())
    error = fields.Dict(allow_none=True)
    created_at = fields.String()
    updated_at = fields.String()
    pass_started_at = fields.String(allow_none=True, metadata={
        "description": "when the running re-clustering pass started (UTC, ISO 8601); null when none runs"})
    last_pass_seconds = FiniteFloat(allow_none=True, metadata={
        "description": "wall time of the last finished pass (re-cluster and refill the pool), seconds; "
                       "a client can wait about this long for the next model"})
    model_url = fields.String()
    callback_url = fields.String(allow_none=True)


class SessionListArgsSchema(PageArgsSchema):
    """``GET /v1/sessions`` query: newest first, cursor pagination as for jobs."""

    state = fields.String(load_default=None, validate=validate.OneOf(SESSION_STATES))
    dataset_id = fields.String(load_default=None, validate=validate.Length(min=1, max=100),
                               metadata={"description": "only the sessions on this dataset (also after the "
                                                        "dataset was deleted, while they exist)"})


class SessionListSchema(Schema):
    sessions = fields.List(fields.Nested(SessionSchema))
    next_page_token = fields.String(allow_none=True)


class QuestionsRequestSchema(Schema):
    class Meta:
        unknown = RAISE

    count = StrictInteger(load_default=10, validate=validate.Range(min=1, max=100))
    worker_id = fields.String(load_default=None, allow_none=True, validate=validate.Length(min=1, max=200),
                              metadata={"description": "a worker is never handed the same question twice"})


def _content():
    """A question's ``content`` field: the same in a lease and in the list of questions."""
    return fields.List(fields.Dict(allow_none=True), metadata={
        "description": "per item, its row's content (text, image_url, fields) or null; see PUT /v1/datasets/{id}/items"})


class QuestionSchema(Schema):
    question_id = fields.String()
    type = fields.String()
    items = fields.List(fields.Integer())
    item_ids = fields.List(fields.String(), allow_none=True)
    content = _content()
    answers = fields.List(fields.String(), metadata={"description": "accepted answer values"})


class QuestionsSchema(Schema):
    questions = fields.List(fields.Nested(QuestionSchema))
    revision = fields.Integer()
    budget_remaining = fields.Integer()
    worker_excluded = fields.String(allow_none=True, metadata={
        "description": "why this worker is handed no questions: gold flagged it while the session has "
                       "worker_quality.exclude_flagged (its later answers are rejected with the same reason); "
                       "null otherwise"})


QUESTION_STATES = ("open", "ready", "closed", "withdrawn")
#: What the estimator's ``tell`` did with a closed question's aggregated answer.
MODEL_OUTCOMES = ("accepted", "implied", "duplicate", "conflict", "rejected", "over_budget")


class QuestionListArgsSchema(PageArgsSchema):
    """``GET /v1/sessions/{id}/questions`` query: by question id, cursor pagination."""

    status = fields.String(load_default=None, validate=validate.OneOf(QUESTION_STATES), metadata={
        "description": "open (being answered), ready (enough answers, waiting for the next pass), closed "
                       "(aggregated and told to the model) or withdrawn (no longer asked: not suggested any more "
                       "before it had answers, or left unfinished when the session completed)"})


class RecordedAnswerSchema(Schema):
    worker_id = fields.String(allow_none=True)
    assignment_id = fields.String(allow_none=True)
    answer = fields.String()
    revision = fields.Integer(metadata={"description": "the session's revision when the answer arrived"})


class QuestionRecordSchema(Schema):
    question_id = fields.String()
    type = fields.String()
    items = fields.List(fields.Integer())
    item_ids = fields.List(fields.String(), allow_none=True)
    content = _content()
    status = fields.String(validate=validate.OneOf(QUESTION_STATES))
    created_revision = fields.Integer()
    n_answers = fields.Integer()
    tie_breakers = fields.Integer(metadata={
        "description": "answers the question was asked for beyond answers_per_question because its answers "
                       "tied (as many must_link as cannot_link, or yes as no; dont_know left out): one more at a "
                       "time, at most answers_per_question more; 0 when they never tied"})
    aggregated = fields.String(allow_none=True, metadata={
        "description": "the answer told to the model once closed (see the session's aggregation), else null"})
    model_outcome = fields.String(allow_none=True, validate=validate.OneOf(MODEL_OUTCOMES), metadata={
        "description": "once closed, what the model did with the aggregated answer: accepted (used; counts "
                       "against the budget), implied (earlier answers already settle the pair), duplicate (the "
                       "same items were answered before), conflict (contradicts earlier answers), rejected "
                       "(URASC asks only pairs with one sample of a certain set) or over_budget; all but "
                       "accepted are counted under questions_unused. Null until closed"})
    answers = fields.List(fields.Nested(RecordedAnswerSchema), metadata={
        "description": "every recorded answer, in arrival order: what to approve or review per assignment"})


class QuestionListSchema(Schema):
    questions = fields.List(fields.Nested(QuestionRecordSchema))
    next_page_token = fields.String(allow_none=True)


class AnswerSchema(Schema):
    question_id = fields.String(required=True, validate=validate.Length(min=1, max=200))
    answer = fields.String(required=True, validate=validate.Length(max=50),
                           metadata={"description": "must_link | cannot_link | dont_know (pairwise); "
                                                    "yes | no | dont_know (triplet)"})
    worker_id = fields.String(load_default=None, allow_none=True, validate=validate.Length(min=1, max=200),
                              metadata={"description": "who answered (as in POST .../questions): a worker answers "
                                                       "a question once (a second answer is rejected); omit it "
                                                       "(or null) for untracked answers"})
    assignment_id = fields.String(load_default=None, allow_none=True, validate=validate.Length(min=1, max=200),
                                  metadata={"description": "makes retries idempotent: sent again for the same "
                                                           "question it is a duplicate (nothing recorded); "
                                                           "for another question it is rejected"})


class AnswersRequestSchema(Schema):
    class Meta:
        unknown = RAISE

    answers = fields.List(fields.Nested(AnswerSchema), required=True, validate=validate.Length(min=1, max=1000))


class AnswerResultSchema(Schema):
    question_id = fields.String()
    assignment_id = fields.String(allow_none=True)
    outcome = fields.String(validate=validate.OneOf(["accepted", "duplicate", "late", "rejected"]))
    reason = fields.String(allow_none=True, metadata={
        "description": "why a rejected or late answer was not taken (a late one: the question already has its "
                       "answers, was withdrawn, or the budget is exhausted; a rejected one: e.g. a word outside "
                       "the vocabulary, or a worker gold flagged under worker_quality.exclude_flagged); "
                       "null otherwise"})


class AnswersResultSchema(Schema):
    results = fields.List(fields.Nested(AnswerResultSchema))
    revision = fields.Integer()


class ContradictedAnswerSchema(Schema):
    question_id = fields.String()
    items = fields.List(fields.Integer(), metadata={"description": "the question's row indices"})
    answer = fields.String(validate=validate.OneOf(["must_link", "cannot_link", "yes", "no"]),
                           metadata={"description": "the aggregated answer"})
    votes = fields.List(fields.String(), metadata={"description": "every answer given to the question"})


class WorkerReliabilitySchema(Schema):
    worker_id = fields.String()
    answers = fields.Integer(metadata={"description": "answers recorded, dont_know included"})
    dont_know = fields.Integer()
    compared = fields.Integer(metadata={"description": "informative answers to questions where the other "
                                                       "workers' informative answers have a strict majority"})
    agreement = FiniteFloat(allow_none=True, metadata={
        "description": "fraction of the compared answers that match the other workers' majority; null when "
                       "none could be compared"})
    estimated_accuracy = FiniteFloat(allow_none=True, metadata={
        "description": "one-coin Dawid-Skene's estimate of the probability that this worker answers right "
                       "(null until two workers have answered two common questions)"})
    gold_answered = fields.Integer(metadata={"description": "gold questions answered (on the annotator page)"})
    gold_accuracy = FiniteFloat(allow_none=True, metadata={
        "description": "fraction of the gold answers that were right; null without gold answers"})
    flagged = fields.Boolean(metadata={
        "description": "gold accuracy below the session's worker_quality.min_gold_accuracy after at least "
                       "min_gold_answered gold answers"})
    excluded = fields.Boolean(metadata={
        "description": "flagged and the session excludes flagged workers: this worker's answers were left "
                       "out of the pass that made this model"})


class ModelWarningSchema(Schema):
    code = fields.String(metadata={"description": "machine-readable: n_clusters_grew"})
    detail = fields.String(metadata={"description": "what happened and what to do, for people"})


class ModelSchema(Schema):
    session_id = fields.String()
    observed_revision = fields.Integer(metadata={
        "description": "the session's observed_revision: these labels reflect every answer up to it"})
    labels = fields.List(fields.Integer())
    item_ids = fields.List(fields.String(), allow_none=True)
    n_clusters = fields.Integer(metadata={
        "description": "clusters in labels; for a pairwise session given n_clusters, more than it when answers "
                       "founded more certain sets (see warnings, code n_clusters_grew)"})
    n_certain_sets = fields.Integer(metadata={"description": "pairwise (URASC) sessions"})
    n_questions_used = fields.Integer()
    certain_sets = fields.List(fields.List(fields.Integer()), metadata={
        "description": "pairwise (URASC) sessions: the certain-sample sets, each a list of row indices in the "
                       "order they joined (the founder first); every pair inside a set is a must-link"})
    must_link = fields.List(fields.List(fields.Integer()), metadata={
        "description": "pairwise sessions: the answered pairs [i, j] the model was told as must_link "
                       "(aggregated answers, in the order told); the must-links the certain sets imply are "
                       "not repeated here"})
    cannot_link = fields.List(fields.List(fields.Integer()), metadata={
        "description": "pairwise sessions: the answered pairs [i, j] the model was told as cannot_link "
                       "(aggregated answers, in the order told); under the paper's set rule (k_growth=sets) "
                       "every pair across two certain sets is a cannot-link as well"})
    triplets = fields.List(fields.List(fields.Raw()),
                           metadata={"description": "triplet sessions: [a, b, c, answer] per answered question, "
                                                    "answer yes | no | dont_know (aggregated)"})
    contradicted_answers = fields.List(
        fields.Nested(ContradictedAnswerSchema),
        metadata={"description": "closed questions whose aggregated answer the labels go against (a "
                                 "must_link answer across two clusters, a cannot_link answer inside one, a "
                                 "yes / no triplet answer the labels imply otherwise), ordered by items: "
                                 "candidates to re-ask or review"})
    excluded_answers = fields.Integer(metadata={
        "description": "answers of flagged workers the pass that made this model left out "
                       "(worker_quality.exclude_flagged)"})
    workers = fields.List(fields.Nested(WorkerReliabilitySchema), metadata={
        "description": "every worker who answered, least agreeing first: whom to review, retrain or "
                       "stop assigning"})
    warnings = fields.List(fields.Nested(ModelWarningSchema), metadata={
        "description": "what the other fields do not say; empty when nothing needs attention"})
    metrics = fields.Dict(allow_none=True)
