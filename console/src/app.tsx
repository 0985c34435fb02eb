import { useEffect, useState } from 'preact/hooks';
import { messageOf, SIGNED_OUT } from './api/client';
import { loadSettings, signIn, signOut, takeFragmentToken, type ConsoleSettings } from './api/session';
import { Link, match, navigate, useLocation, BASE } from './router';
import { SignInPage } from './pages/sign-in';
import { TasksPage } from './pages/tasks';
import { TaskPage } from './pages/task';
import { NewTaskPage } from './pages/new-task';
import { RunPage } from './pages/run';
import { EvalPage } from './pages/eval';
import { ProfilesPage } from './pages/profiles';
import { ProfilePage } from './pages/profile';
import { SchedulesPage } from './pages/schedules';
import { SignedUrlsPage } from './pages/signed-urls';
import { TokensPage } from './pages/tokens';

type Session = { state: 'loading' } | { state: 'signed-out'; problem?: string } | { state: 'signed-in'; settings: ConsoleSettings };

const SECTIONS = [
  { to: '/tasks', label: 'Tasks' },
  { to: '/profiles', label: 'Profiles' },
  { to: '/schedules', label: 'Schedules' },
  { to: '/signed-urls', label: 'Signed URLs' },
  { to: '/tokens', label: 'Tokens' },
];

/** Signs in from a link's fragment if there is one, then asks the API who is signed in. */
async function start(): Promise<Session> {
  const token = takeFragmentToken();
  if (token !== undefined && !(await signIn(token))) {
    return { state: 'signed-out', problem: 'This sign-in link does not work any more: it was used already, or it is older than 10 minutes. Get a new one.' };
  }
  const settings = await loadSettings();
  return settings ? { state: 'signed-in', settings } : { state: 'signed-out' };
}

export function App() {
  const [session, setSession] = useState<Session>({ state: 'loading' });
  const { path, query } = useLocation();

  useEffect(() => {
    start().then(setSession, (err: unknown) => setSession({ state: 'signed-out', problem: `Signing in did not work: ${messageOf(err)}` }));
    const lost = () => setSession({ state: 'signed-out', problem: 'Your session has ended. Sign in again.' });
    window.addEventListener(SIGNED_OUT, lost);
    return () => window.removeEventListener(SIGNED_OUT, lost);
  }, []);

  useEffect(() => {
    if (path === '/') navigate(`${BASE}/tasks`, true);
  }, [path]);

  useEffect(() => {
    const h1 = document.querySelector('h1');
    document.title = h1?.textContent ? `${h1.textContent} · Prompt task runner` : 'Prompt task runner';
  });

  if (session.state === 'loading') return <main><p role="status">Loading…</p></main>;
  if (session.state === 'signed-out') return <SignInPage problem={session.problem} />;
  const { settings } = session;

  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <span class="brand">Prompt task runner</span>
        <nav aria-label="Main">
          <ul>
            {SECTIONS.map((s) => (
              <li key={s.to}>
                <Link to={s.to} aria-current={path.startsWith(s.to) ? 'page' : undefined}>{s.label}</Link>
              </li>
            ))}
          </ul>
        </nav>
        <span class="user">{settings.username}</span>
        <button
          type="button"
          onClick={async () => {
            await signOut().catch(() => undefined);
            setSession({ state: 'signed-out', problem: 'You have signed out.' });
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Page path={path} query={query} settings={settings} />
      </main>
    </>
  );
}

function Page({ path, query, settings }: { path: string; query: URLSearchParams; settings: ConsoleSettings }) {
  let p: Record<string, string> | undefined;
  if (path === '/tasks') return <TasksPage />;
  if (path === '/tasks/new') return <NewTaskPage profile={query.get('profile') ?? 'default'} />;
  if ((p = match('/tasks/:profile/:task', path))) return <TaskPage key={path} profile={p.profile!} task={p.task!} query={query} />;
  if ((p = match('/evals/:profile/:task/:id', path))) return <EvalPage key={path} profile={p.profile!} task={p.task!} id={p.id!} />;
  if ((p = match('/runs/:profile/:task/:run', path))) return <RunPage key={path} profile={p.profile!} task={p.task!} run={p.run!} settings={settings} />;
  if (path === '/profiles') return <ProfilesPage />;
  if ((p = match('/profiles/:profile', path))) return <ProfilePage key={path} profile={p.profile!} />;
  if (path === '/schedules') return <SchedulesPage task={query.get('task') ?? undefined} />;
  if (path === '/signed-urls') return <SignedUrlsPage task={query.get('task') ?? undefined} />;
  if (path === '/tokens') return <TokensPage />;
  return (
    <>
      <h1>Not found</h1>
      <p>
        No page here. <Link to="/tasks">Go to the tasks</Link>.
      </p>
    </>
  );
}
