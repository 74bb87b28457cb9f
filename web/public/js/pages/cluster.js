// Cluster: the agents with their slots used/total, enabled and connected states (admins enable
// and disable them), the cluster's slot utilization, and the task queue in order with the reason
// each task waits (GET /api/v1/agents, /api/v1/tasks). Polled every 2 s.

import { api, describeError, getSession } from '../api.js';
import { el, errorBox, fill, fmtPercent, progressBar, redrawKeepingFocus, stateBadge, table } from '../util.js';

export function clusterPage(main, params, ctx) {
  const status = el('div', { 'aria-live': 'polite' });
  const utilization = el('p', { id: 'utilization' });
  const agents = el('div', { id: 'agents' });
  const tasks = el('div', { id: 'tasks' });
  fill(main, el('h1', {}, 'Cluster'), status, utilization,
    el('section', { 'aria-labelledby': 'agents-title' }, el('h2', { id: 'agents-title' }, 'Agents'), agents),
    el('section', { 'aria-labelledby': 'tasks-title' }, el('h2', { id: 'tasks-title' }, 'Task queue'), tasks));
  const admin = !!getSession()?.admin;

  async function refresh() {
    let agentList;
    let taskList;
    try {
      [agentList, taskList] = await Promise.all([
        api('/agents', { signal: ctx.signal }), api('/tasks', { signal: ctx.signal })]);
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
