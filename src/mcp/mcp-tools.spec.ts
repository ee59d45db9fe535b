import { mcpRequestPermissions, runToolNames, toolPermission } from './mcp-tools';

describe('MCP tool names and permissions', () => {
  it('names agents run_ + their name in lower case, each run of other characters one _', () => {
    expect(runToolNames(['Echo', 'Summarise PDFs!', 'a--b  c'])).toEqual([
      'run_echo',
      'run_summarise_pdfs_',
      'run_a_b_c',
    ]);
  });

  it('gives a clashing name _2, _3 in the order the agents come (oldest first)', () => {
    expect(runToolNames(['Report', 'report', 'REPORT!', 'report'])).toEqual([
      'run_report',
      'run_report_2',
      'run_report_',
      'run_report_3',
    ]);
  });

  it('asks a tools/call for its tool permission and a resources/read for files:read', () => {
    const call = (name: string) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name } });
    expect(mcpRequestPermissions(call('run_echo'))).toEqual(['tasks:create']);
    expect(mcpRequestPermissions(call('cancel_task'))).toEqual(['tasks:update']);
    expect(mcpRequestPermissions(call('nothing'))).toEqual([]);
    expect(mcpRequestPermissions({ jsonrpc: '2.0', id: 2, method: 'resources/read', params: {} })).toEqual([
      'files:read',
    ]);
    expect(mcpRequestPermissions([call('upload_file'), call('list_agents'), call('upload_file')])).toEqual([
      'files:create',
      'agents:read',
    ]);
    expect(mcpRequestPermissions({ method: 'tools/list' })).toEqual([]);
    expect(mcpRequestPermissions('junk')).toEqual([]);
    expect(toolPermission('constructor')).toBeUndefined();
  });
});
