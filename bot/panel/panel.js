/* Mnemo's web panel: lists, edits and forgets the signed-in user's memories, rounds and reminders through
 * /api/v1 (docs/api.md). Plain JavaScript, no build step. User text only ever reaches the page
 * through textContent, never innerHTML. The words it shows live in texts.js (TEXTS, FIELD_NAMES). */
'use strict';

const API = '/api/v1';
const PAGE_SIZE = 20;
const SEARCH_DELAY_MS = 300;
const LANG_STORAGE_KEY = 'mnemo.panel.lang';
const MEMORY_TYPES = ['preference', 'fact', 'event', 'person', 'todo', 'pattern', 'rule'];
const DEFAULT_CONFIDENCE = 1;
const MAX_IMPORT_BYTES = 5 * 1024 * 1024; /* an export file's largest size (shared/accounts/export_format.py) */

const state = {
  lang: chooseLanguage(),
  csrfToken: null,
  offset: 0,
  total: 0,
  type: '',
  query: '',
  editing: null,
  selected: new Set(),
  confirmAction: null,
  searchTimer: null,
  listRequest: 0,
};

const $ = (id) => document.getElementById(id);

function chooseLanguage() {
  let stored = null;
  try { stored = window.localStorage.getItem(LANG_STORAGE_KEY); } catch (error) { /* storage off: use the browser's */ }
  if (stored === 'zh' || stored === 'en') return stored;
  return (navigator.language || 'en').toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

function t(key, ...args) {
  const text = TEXTS[state.lang][key];
  return typeof text === 'function' ? text(...args) : text;
}

/* ---- talking to the API ---- */

class ApiError extends Error {
  constructor(status, code, detail) {
    super(typeof detail === 'string' ? detail : code);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

async function api(method, path, { json, form } = {}) {
  const headers = { Accept: 'application/json', 'Accept-Language': state.lang === 'zh' ? 'zh-CN' : 'en' };
  if (method !== 'GET' && state.csrfToken) headers['X-CSRF-Token'] = state.csrfToken;
  let body;
  if (json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(json);
  } else if (form !== undefined) {
    body = form;
  }
  let response;
  try {
    response = await fetch(API + path, { method, headers, body, credentials: 'same-origin' });
  } catch (error) {
    throw new ApiError(0, 'network', null);
  }
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (response.ok) return data;
  const fields = response.status === 422 ? invalidFields(data) : null;
  if (fields) throw new ApiError(422, 'validation', fields);
  throw new ApiError(response.status, (data && data.code) || 'unknown', data && data.detail);
}

/* The fields a 422 names: the API's {code: "invalid", problems: [{where}]}, or FastAPI's {detail: [{loc}]}. */
function invalidFields(data) {
  if (!data) return null;
  if (Array.isArray(data.problems)) return data.problems.map((item) => String(item.where || '').split('.').pop());
  if (Array.isArray(data.detail)) return data.detail.map((item) => (Array.isArray(item.loc) ? item.loc.at(-1) : ''));
  return null;
}

function errorText(error) {
  const errors = TEXTS[state.lang].errors;
  if (error.code === 'validation') {
    const names = FIELD_NAMES[state.lang];
    const fields = [...new Set(error.detail.map((field) => names[field] || String(field)))].filter(Boolean);
    return fields.length ? errors.validation(fields.join(state.lang === 'zh' ? '、' : ', ')) : errors.invalid;
  }
  if (Object.prototype.hasOwnProperty.call(errors, error.code) && error.code !== 'validation') {
    return errors[error.code];
  }
  return typeof error.detail === 'string' && error.detail ? error.detail : errors.unknown;
}

/* Runs an action; a 401 shows the signed-out screen, any other error is shown in the notice. */
async function attempt(action) {
  try {
    return await action();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.status === 401) showSignedOut();
    else notify(errorText(error), 'error');
    return undefined;
  }
}

/* ---- screens and notices ---- */

function showScreen(name) {
  $('loading').hidden = name !== 'loading';
  $('signed-out').hidden = name !== 'signed-out';
  $('app').hidden = name !== 'app';
  $('sign-out').hidden = name !== 'app';
}

function showSignedOut() {
  state.csrfToken = null;
  $('user-name').textContent = '';
  closeDialogs();
  showScreen('signed-out');
}

function notify(text, kind = 'info', extraLines = []) {
  const notice = $('notice');
  notice.replaceChildren();
  notice.className = `notice ${kind}`;
  notice.dataset.kind = kind;
  notice.append(document.createTextNode(text));
  if (extraLines.length) {
    const list = document.createElement('ul');
    for (const line of extraLines) {
      const item = document.createElement('li');
      item.textContent = line;
      list.append(item);
    }
    notice.append(list);
  }
  notice.hidden = false;
}

function clearNotice() {
  $('notice').hidden = true;
  $('notice').replaceChildren();
}

function closeDialogs() {
  for (const dialog of document.querySelectorAll('dialog[open]')) dialog.close();
}

/* ---- language ---- */

function dateLocale() {
  const browser = navigator.language || 'en';
  return browser.toLowerCase().startsWith(state.lang) ? browser : (state.lang === 'zh' ? 'zh-CN' : 'en');
}

/* A reminder's time on the clock of its own zone: the API sends it with that zone's offset, so its wall-clock
 * part is what the user reads (whatever the browser's zone), followed by the zone's name. */
function formatWallClock(iso, zone) {
  const found = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})/.exec(iso || '');
  if (!found) return formatDate(iso);
  const [, year, month, day, hour, minute] = found.map(Number);
  const wall = new Date(Date.UTC(year, month - 1, day, hour, minute));
  const text = new Intl.DateTimeFormat(dateLocale(), { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' })
    .format(wall);
  return zone ? `${text} (${zone})` : text;
}

function formatDate(iso) {
  if (!iso) return t('never');
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return new Intl.DateTimeFormat(dateLocale(), { dateStyle: 'medium', timeStyle: 'short' }).format(date);
}

function typeName(type) {
  return TEXTS[state.lang].types[type] || type;
}

function fillTypeSelect(select, withAll) {
  const current = select.value;
  select.replaceChildren();
  if (withAll) select.append(new Option(t('allTypes'), ''));
  for (const type of MEMORY_TYPES) select.append(new Option(typeName(type), type));
  select.value = current || (withAll ? '' : 'fact');
}

function applyLanguage() {
  document.documentElement.lang = state.lang === 'zh' ? 'zh-CN' : 'en';
  document.title = t('title');
  for (const element of document.querySelectorAll('[data-i18n]')) {
    if (element.closest('template')) continue;
    element.textContent = t(element.dataset.i18n);
  }
  const toggle = $('lang-toggle');
  toggle.textContent = t('switchLanguage');
  toggle.lang = state.lang === 'zh' ? 'en' : 'zh';
  fillTypeSelect($('type-filter'), true);
  fillTypeSelect($('memory-type'), false);
}

function translateWithin(root) {
  for (const element of root.querySelectorAll('[data-i18n]')) element.textContent = t(element.dataset.i18n);
}

async function switchLanguage() {
  state.lang = state.lang === 'zh' ? 'en' : 'zh';
  try { window.localStorage.setItem(LANG_STORAGE_KEY, state.lang); } catch (error) { /* not remembered */ }
  applyLanguage();
  if (!$('app').hidden) await Promise.all([loadMemories(), loadRounds(), loadReminders(), loadUsage(), loadSettings()]);
}

/* ---- memories ---- */

function memoryCard(memory) {
  const card = $('memory-card-template').content.firstElementChild.cloneNode(true);
  translateWithin(card);
  card.dataset.memoryId = String(memory.id);
  card.querySelector('.memory-type').textContent = typeName(memory.type);
  card.querySelector('.memory-type').dataset.type = memory.type;
  const key = card.querySelector('.memory-key');
  key.textContent = keyLabel(memory);
  if (memory.key) key.title = memory.key;  // the stored key, as the edit form shows it
  card.querySelector('.memory-content').textContent = memory.content;
  card.querySelector('.memory-confidence').textContent = `${Math.round(memory.confidence * 100)}%`;
  card.querySelector('.memory-uses').textContent = String(memory.access_count);
  card.querySelector('.memory-created').textContent = formatDate(memory.created_at);
  card.querySelector('.memory-last-used').textContent = formatDate(memory.last_accessed);
  const box = card.querySelector('.memory-select');
  box.checked = state.selected.has(memory.id);
  box.addEventListener('change', () => {
    if (box.checked) state.selected.add(memory.id); else state.selected.delete(memory.id);
    updateSelection();
  });
  card.querySelector('.memory-edit').addEventListener('click', () => openMemoryDialog(memory));
  card.querySelector('.memory-delete').addEventListener('click', () => confirmThen(
    t('confirmDelete'), t('forget'), null, () => deleteMemory(memory.id)));
  return card;
}

/** The memory's key as a person reads it in the panel's language ("喜欢：吃火锅"), else the key itself. */
function keyLabel(memory) {
  if (memory.key_label && memory.key_label[state.lang]) return memory.key_label[state.lang];
  return memory.key || '';
}

async function loadMemories() {
  const params = new URLSearchParams({ limit: String(PAGE_SIZE), offset: String(state.offset) });
  if (state.type) params.set('type', state.type);
  if (state.query) params.set('q', state.query);
  const request = ++state.listRequest;
  const page = await attempt(() => api('GET', `/memory/long-term?${params}`));
  if (!page || request !== state.listRequest) return;  // a newer search or filter has been sent since
  if (page.items.length === 0 && page.total > 0 && state.offset > 0) {
    state.offset = Math.max(0, Math.floor((page.total - 1) / PAGE_SIZE) * PAGE_SIZE);
    await loadMemories();
    return;
  }
  state.total = page.total;
  const shown = new Set(page.items.map((memory) => memory.id));
  for (const id of [...state.selected]) if (!shown.has(id)) state.selected.delete(id);
  $('memory-list').replaceChildren(...page.items.map(memoryCard));
  $('memory-empty').hidden = page.items.length > 0;
  $('memory-total').textContent = t('total', page.total);
  const first = page.items.length ? page.offset + 1 : 0;
  $('page-info').textContent = t('pageInfo', first, page.offset + page.items.length, page.total);
  $('prev-page').disabled = page.offset === 0;
  $('next-page').disabled = page.offset + page.items.length >= page.total;
  updateSelection();
}

function updateSelection() {
  const count = state.selected.size;
  $('delete-selected').disabled = count === 0;
  $('delete-selected').textContent = count ? `${t('deleteSelected')} (${count})` : t('deleteSelected');
}

function openMemoryDialog(memory) {
  state.editing = memory;
  $('memory-dialog-title').textContent = memory ? t('editTitle') : t('addTitle');
  $('memory-content').value = memory ? memory.content : '';
  $('memory-type').value = memory ? memory.type : 'fact';
  $('memory-key').value = memory && memory.key ? memory.key : '';
  $('memory-confidence').value = String(memory ? memory.confidence : DEFAULT_CONFIDENCE);
  $('memory-form-error').hidden = true;
  $('memory-dialog').showModal();
  $('memory-content').focus();
}

function memoryFormValues() {
  const values = { content: $('memory-content').value.trim(), type: $('memory-type').value };
  const key = $('memory-key').value.trim();
  const confidence = $('memory-confidence').value;
  if (key || (state.editing && state.editing.key)) values.key = key || null;
  if (confidence !== '') values.confidence = Number(confidence);
  return values;
}

async function saveMemory(event) {
  event.preventDefault();
  const values = memoryFormValues();
  const editing = state.editing;
  try {
    if (editing) await api('PUT', `/memory/long-term/${editing.id}`, { json: values });
    else await api('POST', '/memory/long-term', { json: values });
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.status === 401) { showSignedOut(); return; }
    $('memory-form-error').textContent = errorText(error);
    $('memory-form-error').hidden = false;
    return;
  }
  $('memory-dialog').close();
  if (!editing) state.offset = 0;
  notify(editing ? t('saved') : t('added'));
  await loadMemories();
}

async function deleteMemory(id) {
  const result = await attempt(() => api('DELETE', `/memory/long-term/${id}`));
  if (result === undefined) { await loadMemories(); return; }
  state.selected.delete(id);
  notify(t('deleted', result.deleted));
  await loadMemories();
}

async function deleteSelected() {
  const ids = [...state.selected];
  const result = await attempt(() => api('POST', '/memory/long-term/batch-delete', { json: { ids } }));
  if (result === undefined) return;
  state.selected.clear();
  const deleted = count(result.deleted);
  const missing = count(result.not_found);
  notify(missing ? `${t('deleted', deleted)} ${t('notFoundAfterDelete', missing)}` : t('deleted', deleted));
  await loadMemories();
}

/* batch-delete answers lists of ids; the other deletes answer a number. */
function count(value) {
  return Array.isArray(value) ? value.length : Number(value || 0);
}

async function clearAll() {
  const result = await attempt(() => api('DELETE', '/memory/long-term'));
  if (result === undefined) return;
  state.selected.clear();
  state.offset = 0;
  notify(t('deleted', result.deleted));
  await loadMemories();
}

async function importFile() {
  const input = $('import-file');
  const file = input.files && input.files[0];
  if (!file) return;
  const form = new FormData();
  form.append('file', file, file.name);
  const report = await attempt(async () => {
    try {
      return await api('POST', '/memory/long-term/import', { form });
    } catch (error) {
      /* a connection cut while a file over every limit was still going up: say why, not "network" */
      if (error instanceof ApiError && error.code === 'network' && file.size > MAX_IMPORT_BYTES) {
        throw new ApiError(413, 'too_large', null);
      }
      throw error;
    }
  });
  input.value = '';
  if (report === undefined) return;
  const sections = TEXTS[state.lang].sections;
  const counts = Object.entries(report.imported || {}).filter(([, n]) => n > 0)
    .map(([part, n]) => `${sections[part] || part} ${n}`);
  let text = counts.length ? t('imported', counts.join(state.lang === 'zh' ? '，' : ', ')) : t('importedNothing');
  if (report.duplicates) text += ` ${t('duplicates', report.duplicates)}`;
  const refused = report.refused || [];
  if (refused.length) text += ` ${t('refused')}`;
  notify(text, refused.length ? 'warning' : 'info', refused);
  state.offset = 0;
  await Promise.all([loadMemories(), loadRounds()]);
}

/* ---- confirmation ---- */

function confirmThen(text, okLabel, checkText, action) {
  state.confirmAction = action;
  $('confirm-text').textContent = text;
  $('confirm-ok').textContent = okLabel;
  $('confirm-check').checked = false;
  $('confirm-check-row').hidden = !checkText;
  $('confirm-check-text').textContent = checkText || '';
  $('confirm-ok').disabled = Boolean(checkText);
  $('confirm-dialog').showModal();
  $('confirm-cancel').focus();
}

async function confirmed(event) {
  event.preventDefault();
  if ($('confirm-ok').disabled) return;
  const action = state.confirmAction;
  state.confirmAction = null;
  $('confirm-dialog').close();
  if (action) await action();
}

/* ---- reminders ---- */

function reminderCard(reminder) {
  const card = $('reminder-card-template').content.firstElementChild.cloneNode(true);
  translateWithin(card);
  card.dataset.reminderId = String(reminder.id);
  card.querySelector('.reminder-content').textContent = reminder.content;
  card.querySelector('.reminder-due').textContent = formatWallClock(reminder.due_at, reminder.timezone);
  const deadline = card.querySelector('.reminder-deadline');
  deadline.hidden = !(reminder.kind === 'deadline' && reminder.deadline);
  if (!deadline.hidden) deadline.textContent = t('reminderDeadline', formatWallClock(reminder.deadline, ''));
  const status = card.querySelector('.reminder-status');
  status.textContent = TEXTS[state.lang].status[reminder.status] || reminder.status;
  status.dataset.status = reminder.status;
  const cancel = card.querySelector('.reminder-cancel');
  cancel.hidden = reminder.status !== 'pending';
  cancel.addEventListener('click', () => cancelReminder(reminder.id));
  return card;
}

async function loadReminders() {
  const result = await attempt(() => api('GET', '/reminders'));
  if (!result) return;
  $('reminder-list').replaceChildren(...result.items.map(reminderCard));
  $('reminder-empty').hidden = result.items.length > 0;
}

async function cancelReminder(id) {
  const result = await attempt(() => api('POST', `/reminders/${id}/cancel`));
  if (result !== undefined) notify(t('reminderCancelled'));
  await loadReminders();
}

/* ---- settings ---- */

function showZone(settings) {
  $('zone-input').value = settings.timezone || '';
  $('zone-input').placeholder = settings.zone;
  $('zone-current').textContent = settings.timezone ? t('zoneOwn', settings.zone_label)
    : t('zoneDefault', settings.zone_label);
}

async function loadSettings() {
  const [settings, followups] = await Promise.all([attempt(() => api('GET', '/settings')),
    attempt(() => api('GET', '/settings/followups'))]);
  if (settings) showZone(settings);
  if (followups) showFollowups(followups);
}

function showFollowups(followups) {
  $('followups-on').checked = followups.on;
  $('quiet-input').value = followups.quiet_hours;
  $('thread-list').replaceChildren(...followups.threads.map((thread) => {
    const item = document.createElement('li');
    const when = formatWallClock(thread.happens_at, thread.timezone);
    item.textContent = `#${thread.id} ${thread.what} — ${when}` + (thread.asked ? ` (${t('threadAsked')})` : '');
    return item;
  }));
}

async function saveFollowups(event) {
  event.preventDefault();
  const json = { on: $('followups-on').checked, quiet_hours: $('quiet-input').value.trim() || null };
  const followups = await attempt(() => api('PUT', '/settings/followups', { json }));
  if (!followups) return;
  showFollowups(followups);
  notify(t('followupsSaved', followups.on, followups.quiet_hours));
}

async function saveZone(event, value) {
  if (event) event.preventDefault();
  const timezone = value === undefined ? $('zone-input').value.trim() || null : value;
  const change = await attempt(() => api('PUT', '/settings/timezone', { json: { timezone } }));
  if (!change) return;
  showZone(change);
  notify(change.timezone ? t('zoneSaved', change.zone_label, change.moved) : t('zoneCleared', change.zone_label));
  await loadReminders();
}

function fillZoneOptions() {
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  $('zone-options').replaceChildren(...zones.map((zone) => new Option(zone)));
}

/* ---- recycle bin ---- */

function forgottenCard(memory) {
  const card = $('forgotten-card-template').content.firstElementChild.cloneNode(true);
  translateWithin(card);
  card.dataset.memoryId = String(memory.id);
  card.querySelector('.forgotten-content').textContent = memory.content;
  card.querySelector('.forgotten-restore').addEventListener('click', () => restoreMemory(memory.id));
  return card;
}

async function loadForgotten() {
  const result = await attempt(() => api('GET', '/memory/forgotten?limit=100'));
  if (!result) return;
  $('forgotten-list').replaceChildren(...result.items.map(forgottenCard));
  $('forgotten-empty').hidden = result.items.length > 0;
}

async function restoreMemory(id) {
  const result = await attempt(() => api('POST', `/memory/forgotten/${id}/restore`));
  if (result !== undefined) notify(t('memoryRestored'));
  await Promise.all([loadForgotten(), loadMemories()]);
}

/* ---- session ---- */

async function signOut() {
  await attempt(() => api('POST', '/session/sign-out'));
  showSignedOut();
}

async function start() {
  applyLanguage();
  showScreen('loading');
  let session;
  try {
    session = await api('GET', '/session');
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.status === 401) showSignedOut();
    else { showScreen('signed-out'); notify(errorText(error), 'error'); }
    return;
  }
  state.csrfToken = session.csrf_token;
  $('user-name').textContent = session.display_name || '';
  showScreen('app');
  fillZoneOptions();
  await Promise.all([loadMemories(), loadRounds(), loadReminders(), loadForgotten(), loadUsage(), loadSettings()]);
}

function wireEvents() {
  $('lang-toggle').addEventListener('click', switchLanguage);
  $('sign-out').addEventListener('click', signOut);
  $('filter-form').addEventListener('submit', (event) => event.preventDefault());
  $('type-filter').addEventListener('change', () => {
    state.type = $('type-filter').value;
    state.offset = 0;
    loadMemories();
  });
  $('search').addEventListener('input', () => {
    clearTimeout(state.searchTimer);
    state.searchTimer = setTimeout(() => {
      state.query = $('search').value.trim();
      state.offset = 0;
      loadMemories();
    }, SEARCH_DELAY_MS);
  });
  $('prev-page').addEventListener('click', () => { state.offset = Math.max(0, state.offset - PAGE_SIZE); loadMemories(); });
  $('next-page').addEventListener('click', () => { state.offset += PAGE_SIZE; loadMemories(); });
  $('add-memory').addEventListener('click', () => openMemoryDialog(null));
  $('memory-form').addEventListener('submit', saveMemory);
  $('memory-cancel').addEventListener('click', () => $('memory-dialog').close());
  $('delete-selected').addEventListener('click', () => confirmThen(
    t('confirmDeleteSelected', state.selected.size), t('forget'), null, deleteSelected));
  $('clear-all').addEventListener('click', () => confirmThen(
    t('confirmClearAll'), t('forgetAll'), t('confirmClearAllCheck'), clearAll));
  $('confirm-check').addEventListener('change', () => { $('confirm-ok').disabled = !$('confirm-check').checked; });
  $('confirm-form').addEventListener('submit', confirmed);
  $('confirm-cancel').addEventListener('click', () => { state.confirmAction = null; $('confirm-dialog').close(); });
  $('import-file').addEventListener('change', importFile);
  $('notice').addEventListener('click', clearNotice);
  $('zone-form').addEventListener('submit', (event) => saveZone(event));
  $('zone-reset').addEventListener('click', () => saveZone(null, null));
  $('followups-form').addEventListener('submit', (event) => saveFollowups(event));
}

document.addEventListener('DOMContentLoaded', () => {
  wireEvents();
  start();
});
