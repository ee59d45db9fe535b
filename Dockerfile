# syntax=docker/dockerfile:1
# Build stage: CI's own steps (.ci/run: npm ci, npm run build), then the dev dependencies pruned.
# test/deployment-files.e2e-spec.ts holds it to them and to every input the build reads.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
# The dashboard imports the API's generated types (examples/, clients/).
COPY dashboard ./dashboard
COPY examples ./examples
COPY clients ./clients
RUN npm run build && npm prune --omit=dev

# Runtime stage: production dependencies and compiled code only, run as the unprivileged `node` user.
FROM node:20-bookworm-slim AS runtime
# SHUTDOWN_DRAIN_MS: on SIGTERM, 5 s of /health/ready answering 503 while serving, so that a load
# balancer (an orchestrator's endpoints) stops routing here before the port closes.
ENV NODE_ENV=production \
    PORT=3000 \
    DATA_DIR=/data \
    SHUTDOWN_DRAIN_MS=5000
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health/live').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
# exec form: node is PID 1 and receives SIGTERM directly for a graceful shutdown.
CMD ["node", "dist/main.js"]
