"""The Lua scripts of :class:`workers.session_store.SessionStore`.

Each runs atomically inside Redis (``register_script``): recording an answer
with its outcome and the budget, leasing questions to a worker, taking the
waiting questions for a pass, holding the re-clustering slot, ending a
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

# Atomically record one answer: returns the outcome string. The budget: a
# question that gets all its answers is committed to the model (record field
# budget_committed = questions the model used + those waiting for it); once
# that reaches the budget, answers are late (not recorded: a retry after a
# pass left some questions unused is taken) and the worker's lease is dropped,
# so the slot it held goes to whoever leases next. An assignment id
# is recorded with the question it answered (sessions from before kept the
# outcome instead, 'accepted' or 'late': those still count as a retry). A named
# worker answers a question once: its answers are in the question's list. The
# answering worker's lease on the question stops counting as outstanding
# (score 0), so it is never leased that question again. A question whose
# informative answers tie when it has its answers (as many must_link as
# cannot_link, or yes as no; dont_know left out) stays open for one more
# answer (its 'tie_breakers', the answers asked beyond ARGV[4], grows by one),
# and closes once they no longer tie or after ARGV[4] extra answers.
ANSWER_LUA = """
local rec, qkey, akey, assign, ready, lease = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local log = KEYS[7]
local qid, assignment, payload, needed, worker = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local ttl, logged = tonumber(ARGV[6]), ARGV[7]
if redis.call('EXISTS', rec) == 0 then return 'rejected:the session was deleted' end
if assignment ~= '' then
  local used = redis.call('HGET', assign, assignment)
  if used == qid or used == 'accepted' or used == 'late' then return 'duplicate' end
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
local budget = tonumber(redis.call('HGET', rec, 'budget'))
local committed = tonumber(redis.call('HGET', rec, 'budget_committed'))
if not committed then  -- a session from before the field
  committed = tonumber(redis.call('HGET', rec, 'budget_used')) + redis.call('LLEN', ready)
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
redis.call('EXPIRE', log, ttl)
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
  redis.call('HSET', rec, 'budget_committed', committed + 1)
  outcome = 'accepted:ready'
end
redis.call('HSET', qkey, qid, cjson.encode(question))
if assignment ~= '' then redis.call('HSET', assign, assignment, qid) end
return outcome
"""


# Atomically lease up to ARGV[1] open questions of the pool (KEYS[2], best
# first) to worker ARGV[2]: a question it was never handed, and only while its
# answers plus the other workers' outstanding leases (younger than ARGV[4]
# seconds, not yet answered) are fewer than the answers it needs (ARGV[5]).
# Lease keys are built from the prefix ARGV[6] (one Redis, not a cluster).
# A question waiting for tie-breakers needs that many answers more (ANSWER_LUA).
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
# expiry (s) set. Returns 1 if done, 0 if another task holds the slot. A hand-over
# given KEYS[2] (a lost worker's running hash, workers.liveness) also records the
# new task there, under field ARGV[5].
SLOT_LUA = """
local holder = redis.call('GET', KEYS[1])
local op, token = ARGV[1], ARGV[2]
if op == 'claim' then
  -- 'running': the slot as code before 2026-11-27 set it, naming no task. A redelivered pass from
  -- then (its worker killed by the upgrade) would otherwise wait for it to expire (up to an hour).
  if holder and holder ~= token and holder ~= 'running' then return 0 end
  redis.call('SET', KEYS[1], token, 'EX', tonumber(ARGV[4]))
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
