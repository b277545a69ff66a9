import { runCli } from './program.js';

runCli(process.argv.slice(2)).then((code) => {
  // Commands close what they open; the exit guards against a stray handle keeping the CLI alive. serve
  // ends when its service has stopped and lets the process wind down by itself.
  if (code !== 0) process.exit(code);
  if (process.argv[2] !== 'serve') process.exit(process.exitCode ?? 0);
});
