# The service image used by docker-compose.yml: compiled JavaScript, production dependencies only.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The compiler is all the build needs: not the embedded PostgreSQL binaries, nor any install script.
RUN npm ci --omit=optional --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only: tsx is a dev dependency (the image runs JavaScript) and the embedded
# PostgreSQL an optional one (a container always names DATABASE_URL). No install scripts, as package.json's
# allowScripts approves none.
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
  && npm cache clean --force
COPY --from=build /app/dist ./dist
# package.json's `devcloud` command, which `devcloud soak` starts for each role: with neither tsx nor the
# sources here, it runs dist/.
COPY bin ./bin
RUN mkdir -p /var/lib/devcloud && chown node:node /var/lib/devcloud
USER node
ENV NODE_ENV=production
EXPOSE 8080 8883
# A young generation of 64 MiB: the broker and ingest allocate per message, and with the default the
# scavenger took a sixth of the serving process (docs/performance.md).
ENTRYPOINT ["node", "--max-semi-space-size=64", "dist/cli/main.js"]
CMD ["serve"]
