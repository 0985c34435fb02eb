import { useState } from 'preact/hooks';
import { api, messageOf, ok } from '../api/client';
import { checked, text } from '../lib/forms';
import { useLoad } from '../lib/use-load';
import { Link, seg } from '../router';

/** The user's profiles, and a new one. */
export function ProfilesPage() {
  const profiles = useLoad(() => ok(api.GET('/api/profiles/{user}', { params: { path: { user: '~' } } })), []);
  const [problem, setProblem] = useState<string>();
  const create = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    setProblem(undefined);
    try {
      await ok(
        api.POST('/api/profiles/{user}/{profile}', {
          params: { path: { user: '~', profile: text(form, 'name') ?? '' } },
          body: { description: text(form, 'description') ?? '', is_public: checked(form, 'public') },
        }),
      );
      form.reset();
      profiles.reload();
    } catch (err) {
      setProblem(messageOf(err));
    }
  };
  return (
    <>
      <h1>Profiles</h1>
      {profiles.error && <p role="alert">{profiles.error}</p>}
      <ul>
        {profiles.data?.map((p) => {
          const name = p.slug.split('/')[1]!;
          return (
            <li key={p.slug}>
              <Link to={`/profiles/${seg(name)}`}>{name}</Link> {p.description && <span class="muted">— {p.description}</span>}
            </li>
          );
        })}
      </ul>
      <form onSubmit={create} aria-labelledby="new-profile-heading">
        <h2 id="new-profile-heading">New profile</h2>
        <p>
          <label for="profile-name">Name</label>
          <input id="profile-name" name="name" required />
        </p>
        <p>
          <label for="profile-description">Description</label>
          <input id="profile-description" name="description" />
        </p>
        <p>
          <input id="profile-public" name="public" type="checkbox" />
          <label for="profile-public">Public</label>
        </p>
        {problem && <p role="alert">{problem}</p>}
        <button type="submit">Create profile</button>
      </form>
    </>
  );
}
