'use strict';
const { Pool } = require('pg');

const pool = new Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.PG_POOL_MAX || 10),
  idleTimeoutMillis: 30000,
  connectionTimeoutMillis: 5000,
  application_name: 'checkout-api',
});

pool.on('error', (err) => {
  // errors on idle clients (e.g. server restart)
  require('../log').error({ err }, 'pg pool idle client error');
});

module.exports = pool;
