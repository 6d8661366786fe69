import json, itertools, time
from benchmarks import kernel_agreement as ka
from benchmarks.kernel_agreement import Item, _work
t=time.time()
bad=[]
n_items=0
for n,k in itertools.product((40, 80, 200), (256, 384, 640, 1152)):
    for s,g,zp,ao in ka.LAYOUTS:
        for dt in ("float16","bfloat16"):
            if s=="w4a16" and dt=="bfloat16": continue
            item=Item("triton",s,g,zp,ao,dt,n,k)
            _, r = _work((item,(1,2,3,17,33,65,128),"cpu"))
            n_items+=1
            if not r.get("ok"):
                bad.append((item, {x:r[x] for x in r if x in ("refused","failed","worst_rel_error","worst_m")}))
print(n_items, "items", len(bad), "bad", round(time.time()-t), "s")
for b in bad: print(b)
