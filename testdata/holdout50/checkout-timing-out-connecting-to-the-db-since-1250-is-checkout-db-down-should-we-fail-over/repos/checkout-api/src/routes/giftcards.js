'use strict';
const express = require('express');
const pool = require('../db/pool');
const log = require('../log');

const router = express.Router();

// POST /v1/checkout/:cartId/giftcard  { code, amountCents }
router.post('/:cartId/giftcard', async (req, res, next) => {
  const { code, amountCents } = req.body;
  let client;
  try {
    client = await pool.connect();
    await client.query('BEGIN');
    const { rows } = await client.query(
      'SELECT id, balance_cents, currency FROM gift_cards WHERE code = $1 FOR UPDATE',
      [code],
    );
    if (rows.length === 0) {
      await client.query('ROLLBACK');
      client.release();
      return res.status(404).json({ error: 'gift_card_not_found' });
    }
    const card = rows[0];
    if (card.balance_cents < amountCents) {
      log.warn({ code: mask(code), status: 409, reason: 'insufficient_balance' }, 'gift card redemption rejected');
      return res.status(409).json({ error: 'insufficient_balance', balanceCents: card.balance_cents });
    }
    await client.query(
      'UPDATE gift_cards SET balance_cents = balance_cents - $1, updated_at = now() WHERE id = $2',
      [amountCents, card.id],
    );
    await client.query(
      'INSERT INTO cart_payments (cart_id, method, gift_card_id, amount_cents) VALUES ($1, $2, $3, $4)',
      [req.params.cartId, 'gift_card', card.id, amountCents],
    );
    await client.query('COMMIT');
    client.release();
    return res.status(201).json({ appliedCents: amountCents });
  } catch (err) {
    if (client) {
      await client.query('ROLLBACK').catch(() => {});
      client.release();
    }
    return next(err);
  }
});

function mask(code) {
  return `GC-****-${String(code).slice(-4)}`;
}

module.exports = router;
