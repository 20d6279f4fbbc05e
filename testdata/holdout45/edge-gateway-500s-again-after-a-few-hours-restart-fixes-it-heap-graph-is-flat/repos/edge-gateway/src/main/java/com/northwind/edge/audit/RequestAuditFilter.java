package com.northwind.edge.audit;

import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** Records a digest of every mutating request body for the PCI audit trail (EDGE-412). */
@Component
public class RequestAuditFilter implements WebFilter, Ordered {

  private final AuditPublisher publisher;

  public RequestAuditFilter(AuditPublisher publisher) {
    this.publisher = publisher;
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    if (!exchange.getRequest().getMethod().name().matches("POST|PUT|PATCH")) {
      return chain.filter(exchange);
    }
    return DataBufferUtils.join(exchange.getRequest().getBody())
        .flatMap(body -> {
          DataBufferUtils.retain(body);
          publisher.publish(exchange.getRequest(), AuditDigest.of(body));
          ServerHttpRequestDecorator replay = new ServerHttpRequestDecorator(exchange.getRequest()) {
            @Override
            public Flux<DataBuffer> getBody() {
              return Flux.just(body.slice(0, body.readableByteCount()));
            }
          };
          return chain.filter(exchange.mutate().request(replay).build());
        });
  }

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE + 10;
  }
}
