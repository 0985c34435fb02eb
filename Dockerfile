# One image for the API and the worker: `node dist/src/server.js` or `node dist/src/worker.js`.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
# The web console (served at /console), built from the API's own OpenAPI document before dev packages go.
COPY console ./console
RUN bash console/scripts/build.sh && npx tsc -p tsconfig.build.json && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/package.json ./
COPY --from=build /app/console/dist ./console/dist
# Workflows are bundled from source at worker start.
COPY workflows ./workflows
USER node
EXPOSE 8080
CMD ["node", "dist/src/server.js"]
