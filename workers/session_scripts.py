"""The Lua scripts of :class:`workers.session_store.SessionStore`.

Each runs atomically inside Redis (``register_script``): recording a batch of
answers with their outcomes, the budget and the counters, leasing questions to a worker, taking the
waiting questions for a pass, holding the re-clustering slot (and handing it
on from a task never sent), ending a
re-clustering pass, withdrawing questions, updating a record only while it
exists. Kept apart from the store's Python so that each file stays readable;
the comments above each script give its keys, arguments and result.
"""

# Update fields of a record only while it exists (a deleted session stays deleted).
UPDATE_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""

# Atomically record a batch of answers with everything they count: each answer's
# outcome, the session's counters, its revision and the service-wide answer counts,
# in one step, so a request that dies (its worker killed, Redis gone) has either
# recorded and counted the whole batch or nothing (answers were recorded one step
# each and counted at the end: those recorded before a crash were never counted,
# and the client's retry found them 'duplicate').
#
# KEYS: [1] the record, [2] the questions hash, [3] the assignments hash, [4] the
# ready list, [5] the answer log, [6] the service-wide session stats hash, [7] the
# re-clustering slot, [8] its pending flag, [9] the task that claimed the slot last
# (SLOT_LUA), [10] the list of passes not sent yet; then two per answer: its
# question's answer list and lease zset.
# ARGV: [1] answers per question, [2] the TTL (s) of the keys written, [3] the
# record's updated_at (JSON), [4] answers of the request rejected before recording
# (counted as received and rejected), [5] a new task id ('': request no pass),
# [6] the slot's expiry (s), [7] the new task's member of KEYS[10], [8] now (Unix s),
# then five per answer: question id, assignment id ('' none), the stored answer
# (JSON), worker id ('' none), the logged answer (JSON, with its question id).
#
# Each answer, in order (an answer sees the batch's earlier ones): an assignment id
# is recorded with the question it answered (sessions from before kept the outcome
# instead, 'accepted' or 'late': those still count as a retry). A named worker
# answers a question once: its answers are in the question's list. The budget: a
# question that gets all its answers is committed to the model (record field
# budget_committed = questions the model used + those waiting for it); once that
# reaches the budget, answers are late (not recorded: a retry after a pass left
# some questions unused is taken) and the worker's lease is dropped, so the slot
# it held goes to whoever leases next. The answering worker's lease on the
# question stops counting as outstanding (score 0), so it is never leased that
# question again. A question whose informative answers tie when it has its answers
# (as many must_link as cannot_link, or yes as no; dont_know left out) stays open
# for one more answer (its 'tie_breakers', the answers asked beyond ARGV[1], grows
# by one), and closes once they no longer tie or after ARGV[1] extra answers.
#
# The batch: the counters get answers_received and one per outcome; the revision
# grows by one when an answer was accepted; when none of them closed a question,
# the model was up to date with the revision before and no question waits for it,
# observed_revision moves with the revision (the model is up to date with answers
# that change nothing it uses).
#
# A re-clustering pass is due when an answer closed a question, when a
# duplicate's question waits for a pass that has not taken it yet (the request
# that recorded it may have died before it queued the pass), or when questions
# wait with no pass running or queued (such a request's doing too). Then, as
# SessionStore.request_update does: a free slot is taken for task ARGV[5], which
# the caller must enqueue; a slot held sets the pending flag (the task holding it
# queues one more pass at its end). A slot held by a task that has not claimed it
# (SLOT_LUA 'claim' records the claim in KEYS[9]) while a duplicate's question
# waits is taken over for ARGV[5] too: it may have been reserved by the request
# that died before enqueueing its task, which would hold it, and the questions,
# until it expires. If that task was queued after all, it finds the slot not its
# own and runs nothing. A slot taken for ARGV[5] lists that task in KEYS[10] as
# not sent yet, in this step: should the request die before it sends the task, a
# live worker sends it (workers.liveness.dispatch_unsent); without a retry the slot
# was held, and the questions waited, until the slot expired (an hour), and for good
# when no answer came after that (no question left to lease).
#
# Returns false if the session does not exist (nothing written), else
# {revision, enqueue, outcome 1, outcome 2, ...}: an outcome is 'accepted',
# 'accepted:ready' (the question now has all its answers), 'duplicate',
# 'late:<reason>' or 'rejected:<reason>'; enqueue is 1 when the slot is now
# ARGV[5]'s (the caller enqueues that task), else 0.
ANSWERS_LUA = """
local rec, qkey, assign, ready, log, stats, slot = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local pending, claimed, unsent = KEYS[8], KEYS[9], KEYS[10]
local needed, ttl, updated, refused = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local token, slot_ttl, member, now = ARGV[5], tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
if redis.call('EXISTS', rec) == 0 then return false end
local budget = tonumber(redis.call('HGET', rec, 'budget'))
local committed = tonumber(redis.call('HGET', rec, 'budget_committed'))
if not committed then  -- a session from before the field
  committed = tonumber(redis.call('HGET', rec, 'budget_used')) + redis.call('LLEN', ready)
end
local committed_before = committed
local waiting_dup = false

local function record(qid, assignment, payload, worker, logged, akey, lease)
  if assignment ~= '' then
    local used = redis.call('HGET', assign, assignment)
    if used == qid or used == 'accepted' or used == 'late' then
      if used == qid and not waiting_dup then
        local raw = redis.call('HGET', qkey, qid)
        if raw and cjson.decode(raw)['status'] == 'ready' and redis.call('LPOS', ready, qid) then
          waiting_dup = true
        end
      end
      return 'duplicate'
    end
    if used then
      return "rejected:assignment_id '" .. assignment .. "' was already used for question " .. used
    end
  end
  local q = redis.call('HGET', qkey, qid)
  if not q then return 'rejected:unknown question_id' end
  if worker ~= '' then
    for _, raw in ipairs(redis.call('LRANGE', akey, 0, -1)) do
      local given = cjson.decode(raw)
      if given['worker_id'] == worker then
        local first = given['assignment_id']
        return 'rejected:worker ' .. worker .. ' already answered this question'
          .. (type(first) == 'string' and (' (assignment_id ' .. first .. ')') or '')
      end
    end
  end
  local question = cjson.decode(q)
  if question['status'] ~= 'open' then
    if assignment ~= '' then redis.call('HSET', assign, assignment, qid) end
    if question['status'] == 'withdrawn' then return 'late:the question was withdrawn (no longer asked)' end
    return 'late:the question already has its answers'
  end
  if committed >= budget then
    if worker ~= '' then redis.call('ZREM', lease, worker) end  -- frees its slot for when the budget frees up
    return 'late:budget exhausted: the model has used, or is being told, all ' .. budget .. ' questions'
  end
  if worker ~= '' then
    redis.call('ZADD', lease, 0, worker)
    redis.call('EXPIRE', lease, ttl)
  end
  redis.call('RPUSH', akey, payload)
  redis.call('EXPIRE', akey, ttl)
  redis.call('RPUSH', log, logged)
  question['n_answers'] = question['n_answers'] + 1
  local outcome = 'accepted'
  local extra = question['n_answers'] - needed
  local tied = false
  if extra >= 0 and extra < needed then
    local counts, first, second = {}, 0, 0
    for _, raw in ipairs(redis.call('LRANGE', akey, 0, -1)) do
      local word = cjson.decode(raw)['answer']
      if word ~= 'dont_know' then counts[word] = (counts[word] or 0) + 1 end
    end
    for _, n in pairs(counts) do
      if n > first then first, second = n, first elseif n > second then second = n end
    end
    tied = first > 0 and first == second
  end
  if tied then
    question['tie_breakers'] = extra + 1
  elseif extra >= 0 then
    question['status'] = 'ready'
    redis.call('RPUSH', ready, qid)
    committed = committed + 1
    outcome = 'accepted:ready'
  end
  redis.call('HSET', qkey, qid, cjson.encode(question))
  if assignment ~= '' then redis.call('HSET', assign, assignment, qid) end
  return outcome
end

local out, counts = {}, {accepted = 0, duplicate = 0, late = 0, rejected = refused}
local closed = false
local n = (#ARGV - 8) / 5
for i = 1, n do
  local a = 8 + 5 * (i - 1)
  local outcome = record(ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5],
                         KEYS[10 + 2 * i - 1], KEYS[10 + 2 * i])
  if outcome == 'accepted:ready' then closed = true end
  local word = string.match(outcome, '^[a-z]+')
  counts[word] = counts[word] + 1
  out[i + 2] = outcome
end
if counts['accepted'] > 0 then redis.call('EXPIRE', log, ttl) end
-- the assignments hash and the ready list expire too: created after the pass that last set the
-- session's TTLs (its first answers, or questions closed after a pass failed), they never did
redis.call('EXPIRE', assign, ttl)
redis.call('EXPIRE', ready, ttl)
if committed ~= committed_before then redis.call('HSET', rec, 'budget_committed', committed) end

local counters = cjson.decode(redis.call('HGET', rec, 'counters'))
counters['answers_received'] = (counters['answers_received'] or 0) + n + refused
for word, k in pairs(counts) do
  counters[word] = (counters[word] or 0) + k
  if k > 0 then redis.call('HINCRBY', stats, 'answers:' .. word, k) end
end
local revision = tonumber(redis.call('HGET', rec, 'revision'))
local waiting = redis.call('LLEN', ready)
local fields = {'counters', cjson.encode(counters), 'updated_at', updated}
if counts['accepted'] > 0 then
  if not closed and waiting == 0 and tonumber(redis.call('HGET', rec, 'observed_revision')) == revision then
    table.insert(fields, 'observed_revision')
    table.insert(fields, revision + 1)
  end
  revision = revision + 1
  table.insert(fields, 'revision')
  table.insert(fields, revision)
end
redis.call('HSET', rec, unpack(fields))
out[1] = revision
out[2] = 0
local holder = redis.call('GET', slot)
if token ~= '' and (closed or waiting_dup or (waiting > 0 and not holder)) then
  if not holder or (waiting_dup and holder ~= redis.call('GET', claimed)) then
    redis.call('SET', slot, token, 'EX', slot_ttl)
    redis.call('ZADD', unsent, now, member)
    out[2] = 1
  else
    redis.call('SET', pending, '1', 'EX', slot_ttl)
  end
end
return out
"""


# Atomically lease up to ARGV[1] open questions of the pool (KEYS[2], best
# first) to worker ARGV[2]: a question it was never handed, and only while its
# answers plus the other workers' outstanding leases (younger than ARGV[4]
# seconds, not yet answered) are fewer than the answers it needs (ARGV[5]).
# Lease keys are built from the prefix ARGV[6] (one Redis, not a cluster).
# A question waiting for tie-breakers needs that many answers more (ANSWERS_LUA).
# ARGV[2] '' (an untracked caller): the pool's first open questions, no lease
# recorded and no slot checked. Within the budget (KEYS[3] the record, KEYS[4] the ready list): a question
# nobody holds or answered yet is handed out only while the questions committed
# to the model plus those in flight in the pool (with answers, or a lease younger
# than ARGV[4]) are fewer than the budget, so no worker is handed work whose
# answer can only come back 'late'.
LEASE_LUA = """
local qkey, pkey, rec, ready = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local count, worker, now, lease_s = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local needed, prefix, ttl = tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])
local budget = tonumber(redis.call('HGET', rec, 'budget'))
local committed = tonumber(redis.call('HGET', rec, 'budget_committed'))
if not committed then  -- a session from before the field
  committed = tonumber(redis.call('HGET', rec, 'budget_used') or '0') + redis.call('LLEN', ready)
end
local young = '(' .. tostring(now - lease_s)
local pool, open, busy = redis.call('LRANGE', pkey, 0, -1), {}, {}
local in_flight = 0
for i, qid in ipairs(pool) do
  local raw = redis.call('HGET', qkey, qid)
  if raw then
    local q = cjson.decode(raw)
    if q['status'] == 'open' then
      open[i] = {raw, q['n_answers'], needed + (q['tie_breakers'] or 0)}
      if q['n_answers'] > 0 or redis.call('ZCOUNT', prefix .. qid, young, '+inf') > 0 then
        busy[i] = true
        in_flight = in_flight + 1
      end
    end
  end
end
local out = {}
for i, qid in ipairs(pool) do
  if #out >= count then break end
  local doc = open[i]
  if doc and (busy[i] or not budget or committed + in_flight < budget) then
    local take = worker == ''
    local lkey = prefix .. qid
    if not take and not redis.call('ZSCORE', lkey, worker)
        and doc[2] + redis.call('ZCOUNT', lkey, young, '+inf') < doc[3] then
      redis.call('ZADD', lkey, now, worker)
      redis.call('EXPIRE', lkey, ttl)
      take = true
    end
    if take then
      table.insert(out, doc[1])
      if not busy[i] then in_flight = in_flight + 1 end
    end
  end
end
return out
"""


# Take the questions waiting for the model (KEYS[1], the ready list) for a pass:
# they move to KEYS[2], the list of questions taken by a pass not yet committed
# (ARGV[1]: its TTL), which is returned whole: questions a pass took and never
# committed (its worker was killed, or it failed) are told again by the next.
TAKE_READY_LUA = """
for _, qid in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  redis.call('RPUSH', KEYS[2], qid)
end
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('EXPIRE', KEYS[2], tonumber(ARGV[1])) end
return redis.call('LRANGE', KEYS[2], 0, -1)
"""


# The session's re-clustering slot KEYS[1], held by a task id: ARGV[1] 'claim'
# (task ARGV[2] starts a pass: take the slot if it is free or its own), 'hand_over'
# (to task ARGV[3]) or 'release', each only by the task holding it; ARGV[4] the
# expiry (s) set. Returns 1 if done, 0 if another task holds the slot. A claim
# given KEYS[2] records the task there (the slot's holder has started: ANSWERS_LUA
# takes over only a slot whose holder has not). A hand-over given KEYS[2] (a lost
# worker's running hash, workers.liveness) also records the new task there, under
# field ARGV[5]. A hand-over finding the slot already with ARGV[3] (a new task id, so
# only this hand-over can have put it there) is done: its caller retries after
# losing the reply (workers.tasks.through_outage) and must go on to send that task.
SLOT_LUA = """
local holder = redis.call('GET', KEYS[1])
local op, token = ARGV[1], ARGV[2]
if op == 'hand_over' and holder == ARGV[3] then return 1 end
if op == 'claim' then
  -- 'running': the slot as code before 2026-11-27 set it, naming no task. A redelivered pass from
  -- then (its worker killed by the upgrade) would otherwise wait for it to expire (up to an hour).
  if holder and holder ~= token and holder ~= 'running' then return 0 end
  redis.call('SET', KEYS[1], token, 'EX', tonumber(ARGV[4]))
  if KEYS[2] then redis.call('SET', KEYS[2], token, 'EX', tonumber(ARGV[4])) end
  return 1
end
if holder ~= token then return 0 end
if op == 'hand_over' then
  redis.call('SET', KEYS[1], ARGV[3], 'EX', tonumber(ARGV[4]))
  if KEYS[2] then redis.call('HSET', KEYS[2], ARGV[5], ARGV[3]) end
else
  redis.call('DEL', KEYS[1])
end
return 1
"""


# Take the session's pending-pass flag KEYS[1] for the caller ARGV[1] (a new id per
# call): 1 if it was set, and then KEYS[2] records the taker for ARGV[2] s. A call
# finding it gone and itself recorded took it before its reply was lost (a retry
# through a Redis outage, workers.tasks.through_outage): 1 again, so the pass the flag
# asked for is not lost.
TAKE_PENDING_LUA = """
if redis.call('DEL', KEYS[1]) == 1 then
  redis.call('SET', KEYS[2], ARGV[1], 'EX', tonumber(ARGV[2]))
  return 1
end
if redis.call('GET', KEYS[2]) == ARGV[1] then return 1 end
return 0
"""


# The sweep of passes whose task was never sent (SessionStore.dispatch_unsent): KEYS[1] the list
# of unsent passes, KEYS[2] the session's slot, KEYS[3] the task that last claimed it; ARGV[1] the
# member listed, ARGV[2] its task, ARGV[3] the member of the new task ARGV[4], ARGV[5] the time
# (Unix s) before which ARGV[1] must have been listed, ARGV[6] now, ARGV[7] the slot's expiry (s).
# ARGV[1] leaves the list; if its task still holds the slot and never claimed it, the slot goes to
# ARGV[4], listed from now. Returns 1 if so (the caller sends ARGV[4]), else 0.
UNSENT_PASS_LUA = """
local listed = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not listed or tonumber(listed) > tonumber(ARGV[5]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('GET', KEYS[2]) ~= ARGV[2] or redis.call('GET', KEYS[3]) == ARGV[2] then return 0 end
redis.call('SET', KEYS[2], ARGV[4], 'EX', tonumber(ARGV[7]))
redis.call('ZADD', KEYS[1], tonumber(ARGV[6]), ARGV[3])
return 1
"""


# End a re-clustering pass (KEYS[1] the record, KEYS[2] the ready list), in one
# step with reading the questions that got their answers meanwhile: ARGV[1] the
# revision the pass read, ARGV[2] the questions the model used, ARGV[3..] more
# field / value pairs (JSON). With no question waiting, the model reflects every
# closed question, so it is up to date with the current revision (answers since
# the pass started closed nothing); otherwise with the revision the pass read
# (never lowered) and the pass those questions queued follows. The budget
# committed is recounted: used + waiting. Returns the observed revision written
# (nil: the session is gone).
FINISH_PASS_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local used = tonumber(ARGV[2])
local waiting = redis.call('LLEN', KEYS[2])
local observed = tonumber(redis.call('HGET', KEYS[1], 'revision'))
if waiting > 0 then
  observed = math.max(tonumber(ARGV[1]), tonumber(redis.call('HGET', KEYS[1], 'observed_revision')))
end
redis.call('HSET', KEYS[1], 'observed_revision', observed, 'budget_used', used, 'budget_committed', used + waiting,
           unpack(ARGV, 3))
return observed
"""

# Withdraw the questions ARGV[4..] of the questions hash KEYS[1] that are still
# open, checked and written in one step (an answer arriving meanwhile is either
# counted before or late after): only those without answers and without a lease
# (key prefix ARGV[1]) younger than ARGV[2] (Unix s), or, with ARGV[3] == '1'
# (the session is complete), every one. Returns the withdrawn documents.
WITHDRAW_LUA = """
local out, since, final = {}, ARGV[2], ARGV[3] == '1'
for i = 4, #ARGV do
  local raw = redis.call('HGET', KEYS[1], ARGV[i])
  if raw then
    local q = cjson.decode(raw)
    if q['status'] == 'open' and (final or (q['n_answers'] == 0
        and redis.call('ZCOUNT', ARGV[1] .. ARGV[i], '(' .. since, '+inf') == 0)) then
      q['status'] = 'withdrawn'
      raw = cjson.encode(q)
      redis.call('HSET', KEYS[1], ARGV[i], raw)
      table.insert(out, raw)
    end
  end
end
return out
"""
