module.exports = {
  async up(db) {
    // Moderation queue lists pending reviews per product; index status first.
    await db.collection('reviews').dropIndex('productId_1_createdAt_-1');
    await db.collection('reviews').createIndex({ status: 1, productId: 1, createdAt: -1 });
  },
  async down(db) {
    await db.collection('reviews').dropIndex('status_1_productId_1_createdAt_-1');
    await db.collection('reviews').createIndex({ productId: 1, createdAt: -1 });
  },
};
