const p = JSON.parse(require('fs').readFileSync(process.argv[2],'utf8'));
const byId = new Map(p.nodes.map(n => [n.id, n]));
const self = new Map();
const dt = {}; p.samples.forEach((s,i)=>{ dt[s]=(dt[s]||0)+(p.timeDeltas[i]||0); });
let total=0;
for (const n of p.nodes) { const t = dt[n.id]||0; total+=t; const cf=n.callFrame; const key=`${cf.functionName||'(anon)'} ${cf.url.replace(/.*node_modules\//,'').replace(/.*\/dist\//,'dist/')}:${cf.lineNumber}`; self.set(key,(self.get(key)||0)+t); }
// inclusive by file
const parent = new Map(); for (const n of p.nodes) for (const c of (n.children||[])) parent.set(c, n.id);
const incl = new Map();
for (const n of p.nodes) { const t=dt[n.id]||0; if(!t) continue; const seen=new Set(); let id=n.id; while(id!==undefined){ const m=byId.get(id); const f=m.callFrame.url.replace(/.*node_modules\//,'').split('/').slice(0,2).join('/').replace(/.*\/dist\//,'dist/'); const k=f||m.callFrame.functionName; if(!seen.has(k)){seen.add(k); incl.set(k,(incl.get(k)||0)+t);} id=parent.get(id);} }
console.log('total ms', (total/1000).toFixed(0));
console.log([...self].sort((a,b)=>b[1]-a[1]).slice(0,25).map(([k,v])=>`${(100*v/total).toFixed(1)}% ${k}`).join('\n'));
console.log('--- inclusive by package/file');
console.log([...incl].sort((a,b)=>b[1]-a[1]).slice(0,30).map(([k,v])=>`${(100*v/total).toFixed(1)}% ${k}`).join('\n'));
