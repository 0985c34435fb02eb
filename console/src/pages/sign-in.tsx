/** Shown whenever the API answers 401: how to get a sign-in link. */
export function SignInPage({ problem }: { problem?: string }) {
  return (
    <main id="main" class="narrow">
      <h1>Sign in</h1>
      {problem && <p role="alert">{problem}</p>}
      <p>The console signs you in with a one-time link, valid for 10 minutes. To get one, in the service's checkout run</p>
      <pre>npm run session -- create --user NAME</pre>
      <p>or, with the command-line client,</p>
      <pre>ptr console</pre>
      <p>and open the link it prints. <code>npm run dev</code> prints one when it starts.</p>
    </main>
  );
}
