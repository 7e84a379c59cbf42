/* The conversation card: the signed-in user's rounds (what they said and what Mnemo answered), newest first,
 * paged and searchable by either side, each deletable (both sides go; memories drawn from it stay). Loaded
 * after panel.js, whose helpers ($, t, api, attempt, notify, confirmThen, formatDate, translateWithin) it uses. */
'use strict';

const ROUND_PAGE_SIZE = 10;
const rounds = { offset: 0, query: '', request: 0, searchTimer: null };

function roundCard(round) {
  const card = $('round-card-template').content.firstElementChild.cloneNode(true);
  translateWithin(card);
  card.dataset.roundId = String(round.id);
  card.querySelector('.round-said-at').textContent = formatDate(round.said_at);
  card.querySelector('.round-line').textContent = round.line;
  const reply = card.querySelector('.round-reply-row');
  reply.hidden = round.reply === null;
  card.querySelector('.round-reply').textContent = round.reply || '';
  card.querySelector('.round-paused').hidden = round.recalled;
  card.querySelector('.round-delete').addEventListener('click', () => confirmThen(
    t('confirmDeleteRound'), t('forget'), null, () => deleteRound(round.id)));
  return card;
}

async function loadRounds() {
  const params = new URLSearchParams({ limit: String(ROUND_PAGE_SIZE), offset: String(rounds.offset) });
  if (rounds.query) params.set('q', rounds.query);
  const request = ++rounds.request;
  const page = await attempt(() => api('GET', `/conversation/rounds?${params}`));
  if (!page || request !== rounds.request) return;  // a newer search has been sent since
  if (page.items.length === 0 && page.total > 0 && rounds.offset > 0) {
    rounds.offset = Math.max(0, Math.floor((page.total - 1) / ROUND_PAGE_SIZE) * ROUND_PAGE_SIZE);
    await loadRounds();
    return;
  }
  $('round-list').replaceChildren(...page.items.map(roundCard));
  $('round-empty').hidden = page.items.length > 0;
  $('round-total').textContent = t('roundTotal', page.total);
  const first = page.items.length ? page.offset + 1 : 0;
  $('round-page-info').textContent = t('pageInfo', first, page.offset + page.items.length, page.total);
  $('round-prev-page').disabled = page.offset === 0;
  $('round-next-page').disabled = page.offset + page.items.length >= page.total;
}

async function deleteRound(id) {
  const result = await attempt(() => api('DELETE', `/conversation/rounds/${id}`));
  if (result !== undefined) notify(t('roundDeleted'));
  await loadRounds();
}

function wireRounds() {
  $('round-filter-form').addEventListener('submit', (event) => event.preventDefault());
  $('round-search').addEventListener('input', () => {
    clearTimeout(rounds.searchTimer);
    rounds.searchTimer = setTimeout(() => {
      rounds.query = $('round-search').value.trim();
      rounds.offset = 0;
      loadRounds();
    }, SEARCH_DELAY_MS);
  });
  $('round-prev-page').addEventListener('click', () => {
    rounds.offset = Math.max(0, rounds.offset - ROUND_PAGE_SIZE);
    loadRounds();
  });
  $('round-next-page').addEventListener('click', () => { rounds.offset += ROUND_PAGE_SIZE; loadRounds(); });
}

document.addEventListener('DOMContentLoaded', wireRounds);
