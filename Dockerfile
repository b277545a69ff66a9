# The service image used by docker-compose.yml. Runs TypeScript through tsx, like `npm start`.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY bin ./bin
COPY src ./src
COPY tsconfig.json ./
RUN mkdir -p /var/lib/devcloud && chown node:node /var/lib/devcloud
USER node
ENV NODE_ENV=production
EXPOSE 8080 8883
ENTRYPOINT ["node", "bin/devcloud.js"]
CMD ["serve"]
