import { expect } from 'chai';
import { runWorkflowId } from '../../src/store/runs';
import { openaiText } from '../helpers/fake-provider';
import { createTask, postSigned, signedUrl, waitForRun } from '../helpers/runs';
import { clusterStack } from './harness';
import { signedInOnBoth } from './clients';

/** The Temporal Web UI's server (temporalio/ui-server, as the compose file's temporalio/ui) on the real Temporal server. */
describe('the Temporal Web UI on the cluster topology', () => {
  it('serves the UI, points it at the API\'s codec endpoint, and lists a run\'s workflow through its API', async function () {
    this.timeout(60_000);
    const { uiUrl, apiUrls, fake } = clusterStack();
    const page = await fetch(`${uiUrl}/`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);

    const settings = (await (await fetch(`${uiUrl}/api/v1/settings`)).json()) as { Codec?: { Endpoint?: string }; DefaultNamespace?: string };
    expect(settings.Codec?.Endpoint).to.equal(`${apiUrls[0]}/codec`);
    expect(settings.DefaultNamespace).to.equal('default');

    fake.script(() => openaiText('ok'));
    const { user, apis } = await signedInOnBoth();
    await createTask(apis[0]!, 'default', 'seen');
    const trigger = await postSigned(await signedUrl(apis[0]!, 'default', 'seen'), { text: 'x' }, { 'run-id': 'ui1' });
    expect(trigger.status, trigger.text).to.equal(201);
    expect((await waitForRun(apis[0]!, trigger.body.url, 30_000)).status).to.equal('ready');
    const id = runWorkflowId({ owner: user, profile: 'default', task: 'seen', run: 'ui1' });
    // The UI's own HTTP API, as the browser calls it: the workflow found by our search attribute.
    const query = encodeURIComponent(`Owner = "${user}"`);
    const listed = (await (await fetch(`${uiUrl}/api/v1/namespaces/default/workflows?query=${query}`)).json()) as { executions?: Array<{ execution: { workflowId: string }; status: string }> };
    expect(listed.executions?.map((e) => e.execution.workflowId)).to.deep.equal([id]);
    expect(listed.executions?.[0]?.status).to.equal('WORKFLOW_EXECUTION_STATUS_COMPLETED');
  });
});
