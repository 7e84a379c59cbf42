/* The usage card: what the signed-in user spent today, in 7 and in 30 UTC days (messages, tokens, the share
 * the server served from its cache, and the cost when prices are set), and what is left of today's
 * allowance. Loaded after panel.js, whose helpers ($, t, api, attempt, translateWithin) it uses. */
'use strict';

const MONEY_DIGITS_BELOW_ONE = 4;

function formatCount(value) {
  return new Intl.NumberFormat(dateLocale()).format(value);
}

function formatShare(share) {
  if (share === null || share === undefined) return '—';
  return new Intl.NumberFormat(dateLocale(), { style: 'percent', maximumFractionDigits: 0 }).format(share);
}

function formatMoney(cost, currency) {
  return `${cost.toFixed(cost < 1 ? MONEY_DIGITS_BELOW_ONE : 2)} ${currency}`;
}

function usageCard(window, currency) {
  const card = $('usage-card-template').content.firstElementChild.cloneNode(true);
  translateWithin(card);
  card.dataset.days = String(window.days);
  card.querySelector('.usage-window').textContent = t('usageWindow', window.days);
  card.querySelector('.usage-messages').textContent = formatCount(window.messages);
  card.querySelector('.usage-tokens').textContent = formatCount(window.tokens);
  card.querySelector('.usage-cached').textContent = formatShare(window.cached_share);
  if (currency && window.cost !== null) {
    card.querySelector('.usage-cost-row').hidden = false;
    card.querySelector('.usage-cost').textContent = formatMoney(window.cost, currency);
  }
  return card;
}

async function loadUsage() {
  const usage = await attempt(() => api('GET', '/usage'));
  if (!usage) return;
  $('usage-list').replaceChildren(...usage.windows.map((window) => usageCard(window, usage.currency)));
  const allowance = $('usage-allowance');
  if (usage.allowance) {
    allowance.textContent = t('usageAllowance', formatCount(usage.allowance.remaining),
      formatCount(usage.allowance.limit));
  } else {
    allowance.textContent = usage.lifted ? t('usageNoLimit') : '';
  }
  allowance.hidden = !allowance.textContent;
}
