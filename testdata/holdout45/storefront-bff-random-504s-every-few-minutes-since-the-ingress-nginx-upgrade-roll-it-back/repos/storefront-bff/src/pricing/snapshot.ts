import { gunzipSync } from "node:zlib";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { logger } from "../logger";

export type PriceBook = Map<string, { amount: number; currency: string; validTo?: string }>;

export class PriceSnapshot {
  private book: PriceBook = new Map();
  constructor(private s3: S3Client, private url: URL, private intervalSec: number) {}

  start(): void {
    void this.refresh();
    setInterval(() => void this.refresh(), this.intervalSec * 1000).unref();
  }

  get(sku: string) {
    return this.book.get(sku);
  }

  private async refresh(): Promise<void> {
    const started = Date.now();
    logger.info({ source: this.url.href }, "price snapshot refresh started");
    const obj = await this.s3.send(new GetObjectCommand({ Bucket: this.url.host, Key: this.url.pathname.slice(1) }));
    const gz = Buffer.from(await obj.Body!.transformToByteArray());
    const raw = gunzipSync(gz);
    const rows: Array<{ sku: string; amount: number; currency: string; validTo?: string }> = JSON.parse(raw.toString("utf8"));
    const next: PriceBook = new Map();
    for (const r of rows) next.set(r.sku, { amount: r.amount, currency: r.currency, validTo: r.validTo });
    this.book = next;
    logger.info({ items: next.size, bytes: raw.length, durationMs: Date.now() - started }, "price snapshot refreshed");
  }
}
