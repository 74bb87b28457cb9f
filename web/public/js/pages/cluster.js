// Cluster: the resource pools (scheduler, preemption, slots, trials), the agents with their pool,
// slots used/total, enabled and connected states (admins enable and disable them), the cluster's
// slot utilization, the job queue per pool (experiments in the order the scheduler serves them,
// with priority, weight, cap and why each waits) and the task queue with the reason each task
// waits (GET /api/v1/resource-pools, /api/v1/agents, /api/v1/jobs, /api/v1/tasks). Polled every
// 2 s. Jobs are changed with `cohort job update` (docs/scheduling.md).

import { api, describeError, getSession } from '../api.js';
import { el, errorBox, fill, fmtPercent, progressBar, redrawKeepingFocus, stateBadge, table } from '../util.js';

export function clusterPage(main, params, ctx) {
  const status = el('div', { 'aria-live': 'polite' });
  const utilization = el('p', { id: 'utilization' });
  const agents = el('div', { id: 'agents' });
  const pools = el('div', { id: 'pools' });
  const jobs = el('div', { id: 'jobs' });
  const tasks = el('div', { id: 'tasks' });
  const section = (id, title, body) => el('section', { 'aria-labelledby': `${id}-title` },
    el('h2', { id: `${id}-title` }, title), body);
  fill(main, el('h1', {}, 'Cluster'), status, utilization,
    section('pools', 'Resource pools', pools), section('agents', 'Agents', agents),
    section('jobs', 'Job queue', jobs), section('tasks', 'Task queue', tasks));
  const admin = !!getSession()?.admin;

  async function refresh() {
    let agentList;
    let taskList;
    let poolList;
    let jobList;
    try {
      [agentList, taskList, poolList, jobList] = await Promise.all([
        api('/agents', { signal: ctx.signal }), api('/tasks', { signal: ctx.signal }),
        api('/resource-pools', { signal: ctx.signal }), api('/jobs', { signal: ctx.signal })]);
    } catch (e) {
      if (e.name !== 'AbortError') status.replaceChildren(errorBox(`Could not read the cluster: ${describeError(e)}`));
      return;
    }
    const connected = agentList.agents.filter((a) => a.connected);
    const total = connected.reduce((s, a) => s + a.slots, 0);
    const used = connected.reduce((s, a) => s + a.used, 0);
    utilization.textContent = `${connected.length} agent${connected.length === 1 ? '' : 's'} connected; ` +
      `${used} of ${total} slots in use (${total ? fmtPercent(used / total) : '—'}); ` +
      `${taskList.tasks.filter((t) => t.state === 'QUEUED').length} task(s) waiting.`;
    redrawKeepingFocus(agents, () => fill(agents, agentsTable(agentList.agents, admin, status, refresh)));
    fill(tasks, tasksTable(taskList.tasks));
    fill(pools, poolsTable(poolList.pools));
    fill(jobs, jobsTable(jobList.jobs));
  }
  ctx.every(2000, refresh);
}

function agentsTable(list, admin, status, refresh) {
  const toggle = (a) => {
    const action = a.enabled ? 'disable' : 'enable';
    const b = el('button', { type: 'button', 'data-action': action, 'aria-label': `${action} agent ${a.id}` },
      a.enabled ? 'Disable' : 'Enable');
    b.addEventListener('click', async () => {
      b.disabled = true;
      try {
        await api(`/agents/${encodeURIComponent(a.id)}/${action}`, { method: 'POST', body: {} });
        status.replaceChildren();
      } catch (e) {
        status.replaceChildren(errorBox(`Could not ${action} agent ${a.id}: ${describeError(e)}`));
      }
      refresh();
    });
    return b;
  };
  const columns = [
    { title: 'Agent', cell: (a) => a.id },
    { title: 'Host', cell: (a) => a.host || '—' },
    { title: 'Pool', cell: (a) => a.resource_pool || 'default' },
    { title: 'Slots used', cell: (a) => [progressBar(a.slots ? a.used / a.slots : 0, `slots used on ${a.id}`), ` ${a.used}/${a.slots}`] },
    { title: 'Enabled', cell: (a) => (a.enabled ? 'yes' : 'no (takes no new trials)') },
    { title: 'Connected', cell: (a) => (a.connected ? 'yes' : 'no') },
  ];
  if (admin) columns.push({ title: 'Actions', cell: toggle });
  return table(columns, list, {
    empty: 'No agents: start one with cohort-agent.', caption: 'Agents',
    rowAttrs: (a) => ({ dataset: { key: a.id, agentId: a.id } }),
  });
}

function tasksTable(list) {
  return table([
    { title: '#', class: 'num', cell: (t) => list.indexOf(t) + 1 },
    { title: 'Trial', class: 'num', cell: (t) => el('a', { href: `/trials/${t.trial_id}` }, t.trial_id) },
    { title: 'Experiment', class: 'num', cell: (t) => el('a', { href: `/experiments/${t.experiment_id}` }, t.experiment_id) },
    { title: 'State', cell: (t) => stateBadge(t.state) },
    { title: 'Slots', class: 'num', cell: (t) => t.slots },
    { title: 'Priority', class: 'num', cell: (t) => t.priority },
    { title: 'Where / why it waits', cell: (t) => (t.reason ? el('span', { class: 'reason' }, t.reason) : (t.agents && t.agents.length ? t.agents.join(', ') : '—')) },
  ], list, { empty: 'No tasks: nothing runs or waits.', caption: 'Task queue', rowAttrs: (t) => ({ dataset: { trialId: t.trial_id, state: t.state } }) });
}

function poolsTable(list) {
  return table([
    { title: 'Pool', cell: (p) => p.name },
    { title: 'Scheduler', cell: (p) => (p.scheduler === 'fair_share' ? 'fair share' : 'priority') },
    { title: 'Preemption', cell: (p) => (p.preemption ? 'yes' : 'no') },
    { title: 'Agents', class: 'num', cell: (p) => p.agents },
    { title: 'Slots used', cell: (p) => [progressBar(p.slots ? p.used / p.slots : 0, `slots used in pool ${p.name}`), ` ${p.used}/${p.slots}`] },
    { title: 'Running', class: 'num', cell: (p) => p.trials_running },
    { title: 'Queued', class: 'num', cell: (p) => p.trials_queued },
    { title: 'Description', cell: (p) => p.description || '—' },
  ], list, { caption: 'Resource pools', rowAttrs: (p) => ({ dataset: { pool: p.name } }) });
}

function jobsTable(list) {
  return table([
    { title: 'Pool', cell: (j) => j.pool },
    { title: '#', class: 'num', cell: (j) => j.position },
    { title: 'Experiment', cell: (j) => el('a', { href: `/experiments/${j.experiment_id}` }, `${j.experiment_id} ${j.name}`) },
    { title: 'Owner', cell: (j) => j.owner || '—' },
    { title: 'Priority', class: 'num', cell: (j) => j.priority },
    { title: 'Weight', class: 'num', cell: (j) => j.weight },
    { title: 'Max slots', class: 'num', cell: (j) => (j.max_slots > 0 ? j.max_slots : '—') },
    { title: 'Slots held', class: 'num', cell: (j) => j.slots_held },
    { title: 'Running', class: 'num', cell: (j) => j.trials_running },
    { title: 'Queued', class: 'num', cell: (j) => j.trials_queued },
    { title: 'Why it waits', cell: (j) => (j.waiting ? el('span', { class: 'reason' }, j.waiting) : '—') },
  ], list, { empty: 'No jobs: nothing runs or waits.', caption: 'Job queue', rowAttrs: (j) => ({ dataset: { experimentId: j.experiment_id, pool: j.pool } }) });
}
